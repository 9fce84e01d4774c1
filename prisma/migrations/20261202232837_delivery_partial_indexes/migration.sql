-- DropIndex
DROP INDEX "Delivery_instanceId_state_nextAttemptAt_idx";

-- DropIndex
DROP INDEX "Delivery_targetId_orderKey_seq_idx";

-- AlterTable
ALTER TABLE "Delivery" ADD COLUMN     "leaseUntil" TIMESTAMPTZ(3);

-- CreateIndex
CREATE INDEX "Delivery_claim_idx" ON "Delivery"("instanceId", "nextAttemptAt") WHERE (state = 'pending');

-- CreateIndex
CREATE INDEX "Delivery_predecessors_idx" ON "Delivery"("targetId", "orderKey", "seq") WHERE (state = 'pending');

-- CreateIndex
CREATE INDEX "Delivery_ended_idx" ON "Delivery"("instanceId", "updatedAt") WHERE (state <> 'pending');

-- A claim sets the lease and the attempt count, neither indexed: with room left on the row's page it is a HOT update
-- (no index entry written). Rows are written once, claimed, then ended, so each page keeps room for a new version.
ALTER TABLE "Delivery" SET (fillfactor = 60);
