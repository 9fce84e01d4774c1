import { Card, SimpleGrid, Text, Title } from "@mantine/core";
import { type Access, useAccess } from "../access";
import { claims } from "../auth";
import { type MessageKey, useI18n } from "../i18n";
import { useLink } from "../router";
import { NAV } from "../shell";
import { PageHeader } from "../ui";

const HINTS: Record<string, MessageKey> = {
  "/users": "home.users",
  "/orgs": "home.orgs",
  "/projects": "home.projects",
  "/events": "home.events",
  "/settings": "home.settings",
  "/admins": "home.admins",
  "/idps": "home.idps",
  "/actions": "home.actions",
};

function Tile({ to, title, hint }: { to: string; title: string; hint: string }) {
  const link = useLink(to);
  return (
    <Card withBorder component="a" {...link} padding="lg">
      <Title order={2} size="h4">
        {title}
      </Title>
      <Text c="dimmed" size="sm" mt={4}>
        {hint}
      </Text>
    </Card>
  );
}

export default function Home() {
  const { t } = useI18n();
  const access = useAccess().data as Access | undefined;
  const name = claims()?.name ?? claims()?.preferred_username ?? "";
  const tiles = access ? NAV.filter((i) => i.to !== "/" && i.visible(access)) : [];
  return (
    <>
      <PageHeader title={t("home.title", { name })} />
      {access && tiles.length === 0 && <Text>{t("home.nothing")}</Text>}
      <SimpleGrid cols={{ base: 1, sm: 2, lg: 3 }}>
        {tiles.map((i) => (
          <Tile key={i.to} to={i.to} title={t(i.label)} hint={t(HINTS[i.to] as MessageKey)} />
        ))}
      </SimpleGrid>
    </>
  );
}
