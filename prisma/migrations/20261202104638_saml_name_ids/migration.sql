-- AlterTable
ALTER TABLE "SamlRequest" ADD COLUMN     "nameIdFormat" TEXT;

-- CreateTable
CREATE TABLE "SamlPersistentId" (
    "appId" TEXT NOT NULL,
    "userId" TEXT NOT NULL,
    "nameId" TEXT NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "SamlPersistentId_pkey" PRIMARY KEY ("appId","userId")
);

-- CreateIndex
CREATE UNIQUE INDEX "SamlPersistentId_appId_nameId_key" ON "SamlPersistentId"("appId", "nameId");

-- AddForeignKey
ALTER TABLE "SamlPersistentId" ADD CONSTRAINT "SamlPersistentId_appId_fkey" FOREIGN KEY ("appId") REFERENCES "Application"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "SamlPersistentId" ADD CONSTRAINT "SamlPersistentId_userId_fkey" FOREIGN KEY ("userId") REFERENCES "User"("id") ON DELETE CASCADE ON UPDATE CASCADE;
