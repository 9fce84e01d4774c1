-- CreateTable
CREATE TABLE "SamlLogout" (
    "id" TEXT NOT NULL,
    "instanceId" TEXT NOT NULL,
    "appId" TEXT,
    "requestId" TEXT,
    "relayState" TEXT,
    "returnUrl" TEXT NOT NULL,
    "returnBinding" TEXT,
    "pending" JSONB NOT NULL DEFAULT '[]',
    "sentId" TEXT,
    "partial" BOOLEAN NOT NULL DEFAULT false,
    "createdAt" TIMESTAMPTZ(3) NOT NULL,
    "expiresAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "SamlLogout_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "SamlLogout_instanceId_expiresAt_idx" ON "SamlLogout"("instanceId", "expiresAt");

-- CreateIndex
CREATE UNIQUE INDEX "SamlLogout_appId_requestId_key" ON "SamlLogout"("appId", "requestId");

-- AddForeignKey
ALTER TABLE "SamlLogout" ADD CONSTRAINT "SamlLogout_appId_fkey" FOREIGN KEY ("appId") REFERENCES "Application"("id") ON DELETE CASCADE ON UPDATE CASCADE;
