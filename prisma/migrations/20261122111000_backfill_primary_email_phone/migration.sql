-- Humans created before SCIM kept their email and phone only on the User row;
-- SCIM lists them from UserEmail / UserPhone, where the primary entry is the
-- v2 API's email / phone. Data only: the schema is unchanged.
INSERT INTO "UserEmail" ("id", "userId", "position", "value", "primary")
SELECT 'backfill-email-' || u."id", u."id", 0, u."email", true
FROM "User" u
WHERE u."type" = 'HUMAN'
  AND u."email" IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM "UserEmail" e WHERE e."userId" = u."id");

INSERT INTO "UserPhone" ("id", "userId", "position", "value", "primary")
SELECT 'backfill-phone-' || u."id", u."id", 0, u."phone", true
FROM "User" u
WHERE u."type" = 'HUMAN'
  AND u."phone" IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM "UserPhone" p WHERE p."userId" = u."id");
