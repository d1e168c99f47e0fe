-- AlterEnum
ALTER TYPE "EmailTokenPurpose" ADD VALUE 'passphrase_reset';
