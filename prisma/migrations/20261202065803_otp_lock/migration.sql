-- AlterTable
ALTER TABLE "User" ADD COLUMN     "otpLockedAt" TIMESTAMPTZ(3);
