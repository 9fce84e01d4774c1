-- AlterTable
ALTER TABLE "OAuthToken" ADD COLUMN     "credentialId" TEXT;
