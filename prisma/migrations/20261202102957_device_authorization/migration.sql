-- CreateTable
CREATE TABLE "DeviceAuthorization" (
    "id" TEXT NOT NULL,
    "instanceId" TEXT NOT NULL,
    "appId" TEXT NOT NULL,
    "clientId" TEXT NOT NULL,
    "deviceCodeHash" BYTEA NOT NULL,
    "userCodeHash" BYTEA NOT NULL,
    "scopes" TEXT[],
    "pollInterval" INTEGER NOT NULL,
    "lastPolledAt" TIMESTAMPTZ(3),
    "authRequestId" TEXT,
    "expiresAt" TIMESTAMPTZ(3) NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "DeviceAuthorization_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "DeviceAuthorization_deviceCodeHash_key" ON "DeviceAuthorization"("deviceCodeHash");

-- CreateIndex
CREATE UNIQUE INDEX "DeviceAuthorization_userCodeHash_key" ON "DeviceAuthorization"("userCodeHash");

-- CreateIndex
CREATE UNIQUE INDEX "DeviceAuthorization_authRequestId_key" ON "DeviceAuthorization"("authRequestId");

-- CreateIndex
CREATE INDEX "DeviceAuthorization_instanceId_expiresAt_idx" ON "DeviceAuthorization"("instanceId", "expiresAt");

-- AddForeignKey
ALTER TABLE "DeviceAuthorization" ADD CONSTRAINT "DeviceAuthorization_appId_fkey" FOREIGN KEY ("appId") REFERENCES "Application"("id") ON DELETE CASCADE ON UPDATE CASCADE;
