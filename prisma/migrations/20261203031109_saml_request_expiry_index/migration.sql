-- DropIndex
DROP INDEX "SamlRequest_instanceId_expiresAt_idx";

-- CreateIndex
CREATE INDEX "SamlRequest_expiresAt_idx" ON "SamlRequest"("expiresAt");
