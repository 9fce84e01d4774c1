-- CreateTable
CREATE TABLE "ActionTarget" (
    "id" TEXT NOT NULL,
    "instanceId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "endpoint" TEXT NOT NULL,
    "timeoutMs" INTEGER NOT NULL,
    "interruptOnError" BOOLEAN NOT NULL DEFAULT false,
    "signingKeyEnc" BYTEA NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "ActionTarget_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ActionExecution" (
    "instanceId" TEXT NOT NULL,
    "function" TEXT NOT NULL,
    "targetIds" TEXT[],
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "ActionExecution_pkey" PRIMARY KEY ("instanceId","function")
);

-- CreateIndex
CREATE INDEX "ActionTarget_instanceId_createdAt_idx" ON "ActionTarget"("instanceId", "createdAt");

-- CreateIndex
CREATE UNIQUE INDEX "ActionTarget_instanceId_name_key" ON "ActionTarget"("instanceId", "name");
