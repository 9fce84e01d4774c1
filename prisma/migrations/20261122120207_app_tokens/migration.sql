-- AlterTable
ALTER TABLE "OAuthToken" ALTER COLUMN "userId" DROP NOT NULL;

-- CreateIndex
CREATE INDEX "OAuthToken_appId_idx" ON "OAuthToken"("appId");

-- Tokens that name an application which no longer exists went with it.
DELETE FROM "OAuthToken" WHERE "appId" IS NOT NULL AND NOT EXISTS (SELECT 1 FROM "Application" a WHERE a."id" = "OAuthToken"."appId");

-- AddForeignKey
ALTER TABLE "OAuthToken" ADD CONSTRAINT "OAuthToken_appId_fkey" FOREIGN KEY ("appId") REFERENCES "Application"("id") ON DELETE CASCADE ON UPDATE CASCADE;

