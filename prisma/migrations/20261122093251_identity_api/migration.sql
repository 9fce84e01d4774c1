-- DropIndex
DROP INDEX "Event_instanceId_aggregateType_aggregateId_idx";

-- AlterTable
ALTER TABLE "User" ADD COLUMN     "failedOtpAttempts" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "failedPasswordAttempts" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "lockedAt" TIMESTAMPTZ(3),
ADD COLUMN     "secretCreatedAt" TIMESTAMPTZ(3),
ADD COLUMN     "secretHash" BYTEA;

-- CreateTable
CREATE TABLE "MachineKey" (
    "id" TEXT NOT NULL,
    "instanceId" TEXT NOT NULL,
    "userId" TEXT NOT NULL,
    "publicKey" TEXT NOT NULL,
    "expiresAt" TIMESTAMPTZ(3),
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "MachineKey_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "OrgMetadata" (
    "orgId" TEXT NOT NULL,
    "key" TEXT NOT NULL,
    "value" BYTEA NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "OrgMetadata_pkey" PRIMARY KEY ("orgId","key")
);

-- CreateTable
CREATE TABLE "Setting" (
    "instanceId" TEXT NOT NULL,
    "ownerId" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "value" JSONB NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "Setting_pkey" PRIMARY KEY ("instanceId","ownerId","kind")
);

-- CreateIndex
CREATE INDEX "MachineKey_userId_idx" ON "MachineKey"("userId");

-- CreateIndex
CREATE INDEX "Event_instanceId_aggregateType_aggregateId_createdAt_idx" ON "Event"("instanceId", "aggregateType", "aggregateId", "createdAt");

-- CreateIndex
CREATE INDEX "Event_instanceId_type_createdAt_idx" ON "Event"("instanceId", "type", "createdAt");

-- CreateIndex
CREATE INDEX "Event_instanceId_editorUserId_createdAt_idx" ON "Event"("instanceId", "editorUserId", "createdAt");

-- AddForeignKey
ALTER TABLE "MachineKey" ADD CONSTRAINT "MachineKey_userId_fkey" FOREIGN KEY ("userId") REFERENCES "User"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "OrgMetadata" ADD CONSTRAINT "OrgMetadata_orgId_fkey" FOREIGN KEY ("orgId") REFERENCES "Organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Setting" ADD CONSTRAINT "Setting_instanceId_fkey" FOREIGN KEY ("instanceId") REFERENCES "Instance"("id") ON DELETE CASCADE ON UPDATE CASCADE;
