-- Case-insensitive equality and prefix matching (SCIM caseExact=false attributes, ignore-case
-- filters) compare lower(column) with a lower-cased value or LIKE prefix. text_pattern_ops lets LIKE 'abc%' use
-- the index under any database collation. Prisma schemas cannot express these indexes, and introspection
-- skips expression indexes, so schema.prisma stays in sync with the migrations.
CREATE INDEX "User_instanceId_lower_familyName_idx" ON "User" ("instanceId", lower("familyName") text_pattern_ops);
CREATE INDEX "User_instanceId_lower_givenName_idx" ON "User" ("instanceId", lower("givenName") text_pattern_ops);
CREATE INDEX "User_instanceId_usernameLower_pattern_idx" ON "User" ("instanceId", lower("usernameLower") text_pattern_ops);
CREATE INDEX "UserEmail_lower_value_idx" ON "UserEmail" (lower("value") text_pattern_ops);
