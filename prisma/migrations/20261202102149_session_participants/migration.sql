-- CreateTable
CREATE TABLE "SessionParticipant" (
    "sessionId" TEXT NOT NULL,
    "appId" TEXT NOT NULL,
    "instanceId" TEXT NOT NULL,
    "protocol" TEXT NOT NULL,
    "nameId" TEXT,
    "nameIdFormat" TEXT,
    "sessionIndex" TEXT,
    "sid" TEXT,
    "firstAt" TIMESTAMPTZ(3) NOT NULL,
    "lastAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "SessionParticipant_pkey" PRIMARY KEY ("sessionId","appId")
);

-- CreateIndex
CREATE INDEX "SessionParticipant_appId_nameId_idx" ON "SessionParticipant"("appId", "nameId");

-- AddForeignKey
ALTER TABLE "SessionParticipant" ADD CONSTRAINT "SessionParticipant_sessionId_fkey" FOREIGN KEY ("sessionId") REFERENCES "Session"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "SessionParticipant" ADD CONSTRAINT "SessionParticipant_appId_fkey" FOREIGN KEY ("appId") REFERENCES "Application"("id") ON DELETE CASCADE ON UPDATE CASCADE;
