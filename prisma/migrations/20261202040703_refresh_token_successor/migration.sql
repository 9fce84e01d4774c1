-- AlterTable
ALTER TABLE "RefreshToken" ADD COLUMN     "successorSealed" BYTEA;
