-- DropIndex
DROP INDEX "reactions_id_key";
