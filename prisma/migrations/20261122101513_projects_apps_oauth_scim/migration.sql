-- CreateEnum
CREATE TYPE "ResourceState" AS ENUM ('ACTIVE', 'INACTIVE');

-- CreateEnum
CREATE TYPE "AppType" AS ENUM ('OIDC', 'API', 'SAML');

-- AlterTable
ALTER TABLE "User" ADD COLUMN     "honorificPrefix" TEXT,
ADD COLUMN     "honorificSuffix" TEXT,
ADD COLUMN     "locale" TEXT,
ADD COLUMN     "middleName" TEXT,
ADD COLUMN     "nameFormatted" TEXT,
ADD COLUMN     "profileUrl" TEXT,
ADD COLUMN     "timezone" TEXT,
ADD COLUMN     "title" TEXT,
ADD COLUMN     "userType" TEXT;

-- CreateTable
CREATE TABLE "UserEmail" (
    "id" TEXT NOT NULL,
    "userId" TEXT NOT NULL,
    "position" INTEGER NOT NULL,
    "value" TEXT NOT NULL,
    "type" TEXT,
    "display" TEXT,
    "primary" BOOLEAN NOT NULL DEFAULT false,

    CONSTRAINT "UserEmail_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "UserPhone" (
    "id" TEXT NOT NULL,
    "userId" TEXT NOT NULL,
    "position" INTEGER NOT NULL,
    "value" TEXT NOT NULL,
    "type" TEXT,
    "display" TEXT,
    "primary" BOOLEAN NOT NULL DEFAULT false,

    CONSTRAINT "UserPhone_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "UserAddress" (
    "id" TEXT NOT NULL,
    "userId" TEXT NOT NULL,
    "position" INTEGER NOT NULL,
    "type" TEXT,
    "streetAddress" TEXT,
    "locality" TEXT,
    "region" TEXT,
    "postalCode" TEXT,
    "country" TEXT,
    "formatted" TEXT,
    "primary" BOOLEAN NOT NULL DEFAULT false,

    CONSTRAINT "UserAddress_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ScimExternalId" (
    "userId" TEXT NOT NULL,
    "orgId" TEXT NOT NULL,
    "provisionerId" TEXT NOT NULL,
    "externalId" TEXT NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "ScimExternalId_pkey" PRIMARY KEY ("userId","provisionerId")
);

-- CreateTable
CREATE TABLE "Project" (
    "id" TEXT NOT NULL,
    "instanceId" TEXT NOT NULL,
    "orgId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "state" "ResourceState" NOT NULL DEFAULT 'ACTIVE',
    "projectRoleAssertion" BOOLEAN NOT NULL DEFAULT false,
    "authorizationRequired" BOOLEAN NOT NULL DEFAULT false,
    "projectAccessRequired" BOOLEAN NOT NULL DEFAULT false,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "Project_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ProjectRole" (
    "projectId" TEXT NOT NULL,
    "key" TEXT NOT NULL,
    "displayName" TEXT NOT NULL,
    "group" TEXT,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "ProjectRole_pkey" PRIMARY KEY ("projectId","key")
);

-- CreateTable
CREATE TABLE "ProjectGrant" (
    "id" TEXT NOT NULL,
    "instanceId" TEXT NOT NULL,
    "projectId" TEXT NOT NULL,
    "grantedOrgId" TEXT NOT NULL,
    "roleKeys" TEXT[],
    "state" "ResourceState" NOT NULL DEFAULT 'ACTIVE',
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "ProjectGrant_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "UserGrant" (
    "id" TEXT NOT NULL,
    "instanceId" TEXT NOT NULL,
    "userId" TEXT NOT NULL,
    "orgId" TEXT NOT NULL,
    "projectId" TEXT NOT NULL,
    "projectGrantId" TEXT,
    "roleKeys" TEXT[],
    "state" "ResourceState" NOT NULL DEFAULT 'ACTIVE',
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "UserGrant_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Application" (
    "id" TEXT NOT NULL,
    "instanceId" TEXT NOT NULL,
    "projectId" TEXT NOT NULL,
    "orgId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "state" "ResourceState" NOT NULL DEFAULT 'ACTIVE',
    "type" "AppType" NOT NULL,
    "clientId" TEXT NOT NULL,
    "secretHash" BYTEA,
    "authMethod" TEXT NOT NULL,
    "accessTokenType" "AccessTokenType" NOT NULL DEFAULT 'BEARER',
    "config" JSONB NOT NULL DEFAULT '{}',
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "Application_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "AppKey" (
    "id" TEXT NOT NULL,
    "instanceId" TEXT NOT NULL,
    "appId" TEXT NOT NULL,
    "publicKey" TEXT NOT NULL,
    "expiresAt" TIMESTAMPTZ(3),
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "AppKey_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "SigningKey" (
    "id" TEXT NOT NULL,
    "instanceId" TEXT NOT NULL,
    "alg" TEXT NOT NULL,
    "publicJwk" JSONB NOT NULL,
    "privateKeyEnc" BYTEA NOT NULL,
    "activeFrom" TIMESTAMPTZ(3) NOT NULL,
    "verifyUntil" TIMESTAMPTZ(3),
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "SigningKey_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "OAuthToken" (
    "id" TEXT NOT NULL,
    "instanceId" TEXT NOT NULL,
    "format" TEXT NOT NULL,
    "tokenHash" BYTEA,
    "userId" TEXT NOT NULL,
    "clientId" TEXT NOT NULL,
    "appId" TEXT,
    "scopes" TEXT[],
    "audience" TEXT[],
    "expiresAt" TIMESTAMPTZ(3) NOT NULL,
    "revokedAt" TIMESTAMPTZ(3),
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "OAuthToken_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "UserEmail_userId_position_idx" ON "UserEmail"("userId", "position");

-- CreateIndex
CREATE INDEX "UserEmail_value_idx" ON "UserEmail"("value");

-- CreateIndex
CREATE INDEX "UserPhone_userId_position_idx" ON "UserPhone"("userId", "position");

-- CreateIndex
CREATE INDEX "UserPhone_value_idx" ON "UserPhone"("value");

-- CreateIndex
CREATE INDEX "UserAddress_userId_position_idx" ON "UserAddress"("userId", "position");

-- CreateIndex
CREATE UNIQUE INDEX "ScimExternalId_orgId_provisionerId_externalId_key" ON "ScimExternalId"("orgId", "provisionerId", "externalId");

-- CreateIndex
CREATE INDEX "Project_instanceId_createdAt_idx" ON "Project"("instanceId", "createdAt");

-- CreateIndex
CREATE INDEX "Project_instanceId_name_idx" ON "Project"("instanceId", "name");

-- CreateIndex
CREATE UNIQUE INDEX "Project_orgId_name_key" ON "Project"("orgId", "name");

-- CreateIndex
CREATE INDEX "ProjectGrant_grantedOrgId_idx" ON "ProjectGrant"("grantedOrgId");

-- CreateIndex
CREATE UNIQUE INDEX "ProjectGrant_projectId_grantedOrgId_key" ON "ProjectGrant"("projectId", "grantedOrgId");

-- CreateIndex
CREATE INDEX "UserGrant_instanceId_orgId_idx" ON "UserGrant"("instanceId", "orgId");

-- CreateIndex
CREATE INDEX "UserGrant_projectId_idx" ON "UserGrant"("projectId");

-- CreateIndex
CREATE UNIQUE INDEX "UserGrant_userId_projectId_orgId_key" ON "UserGrant"("userId", "projectId", "orgId");

-- CreateIndex
CREATE UNIQUE INDEX "Application_clientId_key" ON "Application"("clientId");

-- CreateIndex
CREATE INDEX "Application_instanceId_orgId_idx" ON "Application"("instanceId", "orgId");

-- CreateIndex
CREATE UNIQUE INDEX "Application_projectId_name_key" ON "Application"("projectId", "name");

-- CreateIndex
CREATE INDEX "AppKey_appId_idx" ON "AppKey"("appId");

-- CreateIndex
CREATE INDEX "SigningKey_instanceId_activeFrom_idx" ON "SigningKey"("instanceId", "activeFrom");

-- CreateIndex
CREATE UNIQUE INDEX "OAuthToken_tokenHash_key" ON "OAuthToken"("tokenHash");

-- CreateIndex
CREATE INDEX "OAuthToken_userId_idx" ON "OAuthToken"("userId");

-- CreateIndex
CREATE INDEX "OAuthToken_expiresAt_idx" ON "OAuthToken"("expiresAt");

-- AddForeignKey
ALTER TABLE "UserEmail" ADD CONSTRAINT "UserEmail_userId_fkey" FOREIGN KEY ("userId") REFERENCES "User"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "UserPhone" ADD CONSTRAINT "UserPhone_userId_fkey" FOREIGN KEY ("userId") REFERENCES "User"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "UserAddress" ADD CONSTRAINT "UserAddress_userId_fkey" FOREIGN KEY ("userId") REFERENCES "User"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ScimExternalId" ADD CONSTRAINT "ScimExternalId_userId_fkey" FOREIGN KEY ("userId") REFERENCES "User"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Project" ADD CONSTRAINT "Project_orgId_fkey" FOREIGN KEY ("orgId") REFERENCES "Organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ProjectRole" ADD CONSTRAINT "ProjectRole_projectId_fkey" FOREIGN KEY ("projectId") REFERENCES "Project"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ProjectGrant" ADD CONSTRAINT "ProjectGrant_projectId_fkey" FOREIGN KEY ("projectId") REFERENCES "Project"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "UserGrant" ADD CONSTRAINT "UserGrant_userId_fkey" FOREIGN KEY ("userId") REFERENCES "User"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "UserGrant" ADD CONSTRAINT "UserGrant_projectId_fkey" FOREIGN KEY ("projectId") REFERENCES "Project"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "UserGrant" ADD CONSTRAINT "UserGrant_projectGrantId_fkey" FOREIGN KEY ("projectGrantId") REFERENCES "ProjectGrant"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Application" ADD CONSTRAINT "Application_projectId_fkey" FOREIGN KEY ("projectId") REFERENCES "Project"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "AppKey" ADD CONSTRAINT "AppKey_appId_fkey" FOREIGN KEY ("appId") REFERENCES "Application"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "OAuthToken" ADD CONSTRAINT "OAuthToken_userId_fkey" FOREIGN KEY ("userId") REFERENCES "User"("id") ON DELETE CASCADE ON UPDATE CASCADE;
