-- DropIndex
DROP INDEX "MachineKey_userId_idx";

-- DropIndex
DROP INDEX "OAuthToken_userId_idx";

-- DropIndex
DROP INDEX "PersonalAccessToken_userId_idx";

-- CreateIndex
CREATE INDEX "Application_projectId_createdAt_idx" ON "Application"("projectId", "createdAt");

-- CreateIndex
CREATE INDEX "InstanceMember_instanceId_createdAt_idx" ON "InstanceMember"("instanceId", "createdAt");

-- CreateIndex
CREATE INDEX "MachineKey_userId_createdAt_idx" ON "MachineKey"("userId", "createdAt");

-- CreateIndex
CREATE INDEX "MachineKey_instanceId_createdAt_idx" ON "MachineKey"("instanceId", "createdAt");

-- CreateIndex
CREATE INDEX "OAuthToken_userId_createdAt_idx" ON "OAuthToken"("userId", "createdAt");

-- CreateIndex
CREATE INDEX "OrgMember_orgId_createdAt_idx" ON "OrgMember"("orgId", "createdAt");

-- CreateIndex
CREATE INDEX "PersonalAccessToken_userId_createdAt_idx" ON "PersonalAccessToken"("userId", "createdAt");

-- CreateIndex
CREATE INDEX "PersonalAccessToken_instanceId_createdAt_idx" ON "PersonalAccessToken"("instanceId", "createdAt");

-- CreateIndex
CREATE INDEX "ProjectGrant_instanceId_createdAt_idx" ON "ProjectGrant"("instanceId", "createdAt");

-- CreateIndex
CREATE INDEX "ProjectRole_projectId_createdAt_idx" ON "ProjectRole"("projectId", "createdAt");

-- CreateIndex
CREATE INDEX "UserGrant_instanceId_createdAt_idx" ON "UserGrant"("instanceId", "createdAt");
