-- CreateTable
CREATE TABLE "PushedAuthRequest" (
    "id" TEXT NOT NULL,
    "instanceId" TEXT NOT NULL,
    "clientId" TEXT NOT NULL,
    "refHash" BYTEA NOT NULL,
    "params" JSONB NOT NULL,
    "expiresAt" TIMESTAMPTZ(3) NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "PushedAuthRequest_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "PushedAuthRequest_refHash_key" ON "PushedAuthRequest"("refHash");

-- CreateIndex
CREATE INDEX "PushedAuthRequest_instanceId_expiresAt_idx" ON "PushedAuthRequest"("instanceId", "expiresAt");
