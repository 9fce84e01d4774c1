-- AlterTable
ALTER TABLE "OAuthToken" ADD COLUMN     "grantId" TEXT,
ADD COLUMN     "sessionId" TEXT;

-- AlterTable
ALTER TABLE "User" ADD COLUMN     "otpEmailAddedAt" TIMESTAMPTZ(3);

-- CreateTable
CREATE TABLE "Session" (
    "id" TEXT NOT NULL,
    "instanceId" TEXT NOT NULL,
    "userId" TEXT,
    "orgId" TEXT,
    "tokenHash" BYTEA NOT NULL,
    "sequence" INTEGER NOT NULL DEFAULT 0,
    "creatorId" TEXT NOT NULL,
    "userCheckedAt" TIMESTAMPTZ(3),
    "passwordCheckedAt" TIMESTAMPTZ(3),
    "passwordChangeRequired" BOOLEAN NOT NULL DEFAULT false,
    "totpCheckedAt" TIMESTAMPTZ(3),
    "otpEmailCheckedAt" TIMESTAMPTZ(3),
    "webauthnCheckedAt" TIMESTAMPTZ(3),
    "webauthnUserVerified" BOOLEAN NOT NULL DEFAULT false,
    "intentCheckedAt" TIMESTAMPTZ(3),
    "webauthnChallenge" JSONB,
    "otpEmailCodeHash" BYTEA,
    "otpEmailExpiresAt" TIMESTAMPTZ(3),
    "metadata" JSONB NOT NULL DEFAULT '{}',
    "userAgent" JSONB,
    "expiresAt" TIMESTAMPTZ(3),
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "Session_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "AuthRequest" (
    "id" TEXT NOT NULL,
    "instanceId" TEXT NOT NULL,
    "appId" TEXT NOT NULL,
    "clientId" TEXT NOT NULL,
    "redirectUri" TEXT NOT NULL,
    "scopes" TEXT[],
    "state" TEXT,
    "nonce" TEXT,
    "codeChallenge" TEXT,
    "codeChallengeMethod" TEXT,
    "prompt" TEXT[],
    "maxAge" INTEGER,
    "loginHint" TEXT,
    "uiLocales" TEXT[],
    "hintUserId" TEXT,
    "responseMode" TEXT,
    "expiresAt" TIMESTAMPTZ(3) NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finishedAt" TIMESTAMPTZ(3),
    "sessionId" TEXT,
    "userId" TEXT,
    "authTime" TIMESTAMPTZ(3),
    "amr" TEXT[],
    "codeHash" BYTEA,
    "codeExpiresAt" TIMESTAMPTZ(3),
    "codeUsedAt" TIMESTAMPTZ(3),

    CONSTRAINT "AuthRequest_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "RefreshToken" (
    "id" TEXT NOT NULL,
    "instanceId" TEXT NOT NULL,
    "tokenHash" BYTEA NOT NULL,
    "familyId" TEXT NOT NULL,
    "userId" TEXT NOT NULL,
    "clientId" TEXT NOT NULL,
    "appId" TEXT NOT NULL,
    "sessionId" TEXT,
    "scopes" TEXT[],
    "audience" TEXT[],
    "authTime" TIMESTAMPTZ(3) NOT NULL,
    "amr" TEXT[],
    "expiresAt" TIMESTAMPTZ(3) NOT NULL,
    "usedAt" TIMESTAMPTZ(3),
    "revokedAt" TIMESTAMPTZ(3),
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "RefreshToken_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "UserTotp" (
    "userId" TEXT NOT NULL,
    "instanceId" TEXT NOT NULL,
    "secretEnc" BYTEA NOT NULL,
    "verifiedAt" TIMESTAMPTZ(3),
    "lastUsedStep" BIGINT,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "UserTotp_pkey" PRIMARY KEY ("userId")
);

-- CreateTable
CREATE TABLE "Passkey" (
    "id" TEXT NOT NULL,
    "instanceId" TEXT NOT NULL,
    "userId" TEXT NOT NULL,
    "name" TEXT NOT NULL DEFAULT '',
    "rpId" TEXT NOT NULL,
    "credentialId" TEXT,
    "publicKey" BYTEA,
    "counter" BIGINT NOT NULL DEFAULT 0,
    "transports" TEXT[],
    "challenge" JSONB,
    "verifiedAt" TIMESTAMPTZ(3),
    "lastUsedAt" TIMESTAMPTZ(3),
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Passkey_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "UserCode" (
    "userId" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "codeHash" BYTEA NOT NULL,
    "target" TEXT,
    "failedAttempts" INTEGER NOT NULL DEFAULT 0,
    "expiresAt" TIMESTAMPTZ(3) NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "UserCode_pkey" PRIMARY KEY ("userId","kind")
);

-- CreateTable
CREATE TABLE "PasswordHistory" (
    "id" TEXT NOT NULL,
    "userId" TEXT NOT NULL,
    "passwordHash" TEXT NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "PasswordHistory_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "Session_instanceId_createdAt_idx" ON "Session"("instanceId", "createdAt");

-- CreateIndex
CREATE INDEX "Session_instanceId_userId_createdAt_idx" ON "Session"("instanceId", "userId", "createdAt");

-- CreateIndex
CREATE INDEX "Session_expiresAt_idx" ON "Session"("expiresAt");

-- CreateIndex
CREATE UNIQUE INDEX "AuthRequest_codeHash_key" ON "AuthRequest"("codeHash");

-- CreateIndex
CREATE INDEX "AuthRequest_expiresAt_idx" ON "AuthRequest"("expiresAt");

-- CreateIndex
CREATE INDEX "AuthRequest_sessionId_idx" ON "AuthRequest"("sessionId");

-- CreateIndex
CREATE UNIQUE INDEX "RefreshToken_tokenHash_key" ON "RefreshToken"("tokenHash");

-- CreateIndex
CREATE INDEX "RefreshToken_familyId_idx" ON "RefreshToken"("familyId");

-- CreateIndex
CREATE INDEX "RefreshToken_sessionId_idx" ON "RefreshToken"("sessionId");

-- CreateIndex
CREATE INDEX "RefreshToken_userId_idx" ON "RefreshToken"("userId");

-- CreateIndex
CREATE INDEX "RefreshToken_expiresAt_idx" ON "RefreshToken"("expiresAt");

-- CreateIndex
CREATE INDEX "Passkey_userId_idx" ON "Passkey"("userId");

-- CreateIndex
CREATE UNIQUE INDEX "Passkey_instanceId_credentialId_key" ON "Passkey"("instanceId", "credentialId");

-- CreateIndex
CREATE INDEX "PasswordHistory_userId_createdAt_idx" ON "PasswordHistory"("userId", "createdAt");

-- CreateIndex
CREATE INDEX "OAuthToken_sessionId_idx" ON "OAuthToken"("sessionId");

-- CreateIndex
CREATE INDEX "OAuthToken_grantId_idx" ON "OAuthToken"("grantId");

-- AddForeignKey
ALTER TABLE "Session" ADD CONSTRAINT "Session_userId_fkey" FOREIGN KEY ("userId") REFERENCES "User"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "AuthRequest" ADD CONSTRAINT "AuthRequest_appId_fkey" FOREIGN KEY ("appId") REFERENCES "Application"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "RefreshToken" ADD CONSTRAINT "RefreshToken_userId_fkey" FOREIGN KEY ("userId") REFERENCES "User"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "RefreshToken" ADD CONSTRAINT "RefreshToken_appId_fkey" FOREIGN KEY ("appId") REFERENCES "Application"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "UserTotp" ADD CONSTRAINT "UserTotp_userId_fkey" FOREIGN KEY ("userId") REFERENCES "User"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Passkey" ADD CONSTRAINT "Passkey_userId_fkey" FOREIGN KEY ("userId") REFERENCES "User"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "UserCode" ADD CONSTRAINT "UserCode_userId_fkey" FOREIGN KEY ("userId") REFERENCES "User"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "PasswordHistory" ADD CONSTRAINT "PasswordHistory_userId_fkey" FOREIGN KEY ("userId") REFERENCES "User"("id") ON DELETE CASCADE ON UPDATE CASCADE;
