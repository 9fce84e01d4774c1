-- CreateIndex
CREATE INDEX "UserGrant_projectGrantId_idx" ON "UserGrant"("projectGrantId");
