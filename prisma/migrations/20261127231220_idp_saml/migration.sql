-- AlterTable
ALTER TABLE "IdentityProvider" ADD COLUMN     "saml" JSONB,
ADD COLUMN     "samlMetadata" BYTEA,
ADD COLUMN     "type" TEXT NOT NULL DEFAULT 'oidc';

-- AlterTable
ALTER TABLE "IdpIntent" ADD COLUMN     "samlRequestId" TEXT;
