-- CreateTable
CREATE TABLE "IdentityProvider" (
    "id" TEXT NOT NULL,
    "instanceId" TEXT NOT NULL,
    "orgId" TEXT,
    "name" TEXT NOT NULL,
    "issuer" TEXT NOT NULL,
    "clientId" TEXT NOT NULL,
    "clientSecretEnc" BYTEA NOT NULL,
    "scopes" TEXT[],
    "isIdTokenMapping" BOOLEAN NOT NULL DEFAULT false,
    "isLinkingAllowed" BOOLEAN NOT NULL DEFAULT true,
    "isCreationAllowed" BOOLEAN NOT NULL DEFAULT true,
    "isAutoCreation" BOOLEAN NOT NULL DEFAULT false,
    "isAutoUpdate" BOOLEAN NOT NULL DEFAULT false,
    "autoLinking" TEXT NOT NULL DEFAULT 'unspecified',
    "claimMapping" JSONB NOT NULL DEFAULT '{}',
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "IdentityProvider_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "IdpLink" (
    "instanceId" TEXT NOT NULL,
    "idpId" TEXT NOT NULL,
    "externalUserId" TEXT NOT NULL,
    "externalUserName" TEXT NOT NULL,
    "userId" TEXT NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "IdpLink_pkey" PRIMARY KEY ("instanceId","idpId","externalUserId")
);

-- CreateTable
CREATE TABLE "IdpIntent" (
    "id" TEXT NOT NULL,
    "instanceId" TEXT NOT NULL,
    "idpId" TEXT NOT NULL,
    "state" TEXT NOT NULL,
    "nonce" TEXT NOT NULL,
    "codeVerifierEnc" BYTEA NOT NULL,
    "successUrl" TEXT NOT NULL,
    "failureUrl" TEXT NOT NULL,
    "expiresAt" TIMESTAMPTZ(3) NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "succeededAt" TIMESTAMPTZ(3),
    "failedAt" TIMESTAMPTZ(3),
    "error" TEXT,
    "tokenHash" BYTEA,
    "externalUserId" TEXT,
    "externalUserName" TEXT,
    "profile" JSONB,
    "rawClaims" JSONB,
    "userId" TEXT,
    "consumedAt" TIMESTAMPTZ(3),

    CONSTRAINT "IdpIntent_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "IdentityProvider_instanceId_createdAt_idx" ON "IdentityProvider"("instanceId", "createdAt");

-- CreateIndex
CREATE INDEX "IdentityProvider_instanceId_orgId_createdAt_idx" ON "IdentityProvider"("instanceId", "orgId", "createdAt");

-- CreateIndex
CREATE INDEX "IdpLink_userId_idx" ON "IdpLink"("userId");

-- CreateIndex
CREATE UNIQUE INDEX "IdpIntent_state_key" ON "IdpIntent"("state");

-- CreateIndex
CREATE INDEX "IdpIntent_expiresAt_idx" ON "IdpIntent"("expiresAt");

-- AddForeignKey
ALTER TABLE "IdentityProvider" ADD CONSTRAINT "IdentityProvider_orgId_fkey" FOREIGN KEY ("orgId") REFERENCES "Organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "IdpLink" ADD CONSTRAINT "IdpLink_idpId_fkey" FOREIGN KEY ("idpId") REFERENCES "IdentityProvider"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "IdpLink" ADD CONSTRAINT "IdpLink_userId_fkey" FOREIGN KEY ("userId") REFERENCES "User"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "IdpIntent" ADD CONSTRAINT "IdpIntent_idpId_fkey" FOREIGN KEY ("idpId") REFERENCES "IdentityProvider"("id") ON DELETE CASCADE ON UPDATE CASCADE;
