-- DropIndex
DROP INDEX "Delivery_state_nextAttemptAt_idx";

-- CreateIndex
CREATE INDEX "Delivery_instanceId_state_nextAttemptAt_idx" ON "Delivery"("instanceId", "state", "nextAttemptAt");
