-- AlterTable
ALTER TABLE "accounts" ADD COLUMN     "tokens_valid_from" TIMESTAMPTZ(3);
