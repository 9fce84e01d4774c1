-- AlterTable
ALTER TABLE "OAuthToken" ADD COLUMN     "act" JSONB;
