-- Usernames become unique per organization (issue 11, finding 5): existing rows were unique per instance, so
-- they already satisfy the new index, and nothing else changes. The plain (instanceId, usernameLower) index serves the
-- instance-wide lookups (client ids, login names, the usernamesUniqueInInstance check).
-- DropIndex
DROP INDEX "User_instanceId_usernameLower_key";

-- CreateIndex
CREATE INDEX "User_instanceId_usernameLower_idx" ON "User"("instanceId", "usernameLower");

-- CreateIndex
CREATE UNIQUE INDEX "User_instanceId_orgId_usernameLower_key" ON "User"("instanceId", "orgId", "usernameLower");
