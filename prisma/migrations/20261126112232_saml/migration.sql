-- AlterTable
ALTER TABLE "Application" ADD COLUMN     "samlEntityId" TEXT;

-- CreateTable
CREATE TABLE "SamlCertificate" (
    "id" TEXT NOT NULL,
    "instanceId" TEXT NOT NULL,
    "certificatePem" TEXT NOT NULL,
    "privateKeyEnc" BYTEA NOT NULL,
    "activeFrom" TIMESTAMPTZ(3) NOT NULL,
    "verifyUntil" TIMESTAMPTZ(3),
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "SamlCertificate_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "SamlRequest" (
    "id" TEXT NOT NULL,
    "instanceId" TEXT NOT NULL,
    "appId" TEXT NOT NULL,
    "requestId" TEXT NOT NULL,
    "issuer" TEXT NOT NULL,
    "acsUrl" TEXT NOT NULL,
    "binding" TEXT NOT NULL,
    "relayState" TEXT,
    "forceAuthn" BOOLEAN NOT NULL DEFAULT false,
    "isPassive" BOOLEAN NOT NULL DEFAULT false,
    "createdAt" TIMESTAMPTZ(3) NOT NULL,
    "expiresAt" TIMESTAMPTZ(3) NOT NULL,
    "finishedAt" TIMESTAMPTZ(3),

    CONSTRAINT "SamlRequest_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "SamlCertificate_instanceId_activeFrom_idx" ON "SamlCertificate"("instanceId", "activeFrom");

-- CreateIndex
CREATE INDEX "SamlRequest_instanceId_expiresAt_idx" ON "SamlRequest"("instanceId", "expiresAt");

-- CreateIndex
CREATE UNIQUE INDEX "SamlRequest_appId_requestId_key" ON "SamlRequest"("appId", "requestId");

-- CreateIndex
CREATE UNIQUE INDEX "Application_instanceId_samlEntityId_key" ON "Application"("instanceId", "samlEntityId");

-- AddForeignKey
ALTER TABLE "SamlRequest" ADD CONSTRAINT "SamlRequest_appId_fkey" FOREIGN KEY ("appId") REFERENCES "Application"("id") ON DELETE CASCADE ON UPDATE CASCADE;
