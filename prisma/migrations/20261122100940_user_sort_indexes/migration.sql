-- CreateIndex
CREATE INDEX "User_instanceId_email_idx" ON "User"("instanceId", "email");

-- CreateIndex
CREATE INDEX "User_instanceId_givenName_idx" ON "User"("instanceId", "givenName");

-- CreateIndex
CREATE INDEX "User_instanceId_familyName_idx" ON "User"("instanceId", "familyName");

-- CreateIndex
CREATE INDEX "User_instanceId_displayName_idx" ON "User"("instanceId", "displayName");

-- CreateIndex
CREATE INDEX "User_instanceId_nickName_idx" ON "User"("instanceId", "nickName");
