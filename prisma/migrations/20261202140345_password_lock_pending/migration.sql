-- AlterTable
ALTER TABLE "User" ADD COLUMN     "passwordLockPending" BOOLEAN NOT NULL DEFAULT false;
