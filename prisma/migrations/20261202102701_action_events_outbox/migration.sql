-- AlterTable
ALTER TABLE "ActionTarget" ADD COLUMN     "kind" TEXT NOT NULL DEFAULT 'call',
ADD COLUMN     "orgId" TEXT;

-- CreateTable
CREATE TABLE "ActionEventExecution" (
    "instanceId" TEXT NOT NULL,
    "orgId" TEXT NOT NULL DEFAULT '',
    "condition" TEXT NOT NULL,
    "targetIds" TEXT[],
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "ActionEventExecution_pkey" PRIMARY KEY ("instanceId","orgId","condition")
);

-- CreateTable
CREATE TABLE "Delivery" (
    "id" TEXT NOT NULL,
    "seq" BIGSERIAL NOT NULL,
    "instanceId" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "targetId" TEXT NOT NULL,
    "orgId" TEXT,
    "eventType" TEXT NOT NULL,
    "orderKey" TEXT NOT NULL,
    "payload" JSONB NOT NULL,
    "state" TEXT NOT NULL DEFAULT 'pending',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "maxAttempts" INTEGER NOT NULL,
    "nextAttemptAt" TIMESTAMPTZ(3) NOT NULL,
    "lastError" TEXT,
    "createdAt" TIMESTAMPTZ(3) NOT NULL,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "Delivery_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "Delivery_state_nextAttemptAt_idx" ON "Delivery"("state", "nextAttemptAt");

-- CreateIndex
CREATE INDEX "Delivery_targetId_orderKey_seq_idx" ON "Delivery"("targetId", "orderKey", "seq");

-- CreateIndex
CREATE INDEX "Delivery_instanceId_createdAt_idx" ON "Delivery"("instanceId", "createdAt");
