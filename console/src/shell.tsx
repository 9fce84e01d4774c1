// The frame around every page: header (menu button on small screens, language, light/dark, the user and sign-out)
// and the navigation, which lists only the areas the user's roles open.
import {
  ActionIcon,
  AppShell,
  Burger,
  Group,
  Loader,
  Menu,
  NavLink,
  SegmentedControl,
  Text,
  Title,
  UnstyledButton,
  useComputedColorScheme,
  useMantineColorScheme,
} from "@mantine/core";
import { useDisclosure } from "@mantine/hooks";
import type { ReactNode } from "react";
import type { Access } from "./access";
import { claims, signOut } from "./auth";
import { type Lang, type MessageKey, useI18n } from "./i18n";
import { useLink, useRouter } from "./router";

interface NavItem {
  to: string;
  label: MessageKey;
  visible(a: Access): boolean;
}

export const NAV: NavItem[] = [
  { to: "/", label: "nav.home", visible: () => true },
  { to: "/users", label: "nav.users", visible: (a) => a.users },
  { to: "/orgs", label: "nav.orgs", visible: (a) => a.orgs },
  { to: "/projects", label: "nav.projects", visible: (a) => a.projects },
  { to: "/events", label: "nav.events", visible: (a) => a.events },
  { to: "/settings", label: "nav.settings", visible: (a) => a.instance },
  { to: "/admins", label: "nav.admins", visible: (a) => a.instance },
  { to: "/idps", label: "nav.idps", visible: (a) => a.instance },
  { to: "/actions", label: "nav.actions", visible: (a) => a.instance },
];

function NavEntry({ item, onNavigate }: { item: NavItem; onNavigate(): void }) {
  const { t } = useI18n();
  const { path } = useRouter();
  const link = useLink(item.to);
  const active = item.to === "/" ? path === "/" : path === item.to || path.startsWith(`${item.to}/`);
  return (
    <NavLink
      component="a"
      href={link.href}
      onClick={(e) => {
        link.onClick(e);
        onNavigate();
      }}
      label={t(item.label)}
      active={active}
      variant="filled"
      aria-current={active ? "page" : undefined}
    />
  );
}

function ColorSchemeToggle() {
  const { t } = useI18n();
  const { setColorScheme } = useMantineColorScheme();
  const scheme = useComputedColorScheme("light");
  const next = scheme === "dark" ? "light" : "dark";
  return (
    <ActionIcon variant="default" size="lg" onClick={() => setColorScheme(next)} aria-label={t(next === "dark" ? "shell.dark" : "shell.light")}>
      <span aria-hidden="true">{scheme === "dark" ? "☀" : "☾"}</span>
    </ActionIcon>
  );
}

function LanguageSwitch() {
  const { lang, setLang, t } = useI18n();
  return (
    <SegmentedControl
      size="xs"
      value={lang}
      onChange={(v) => setLang(v as Lang)}
      aria-label={t("shell.language")}
      data={[
        { value: "en", label: "EN" },
        { value: "de", label: "DE" },
      ]}
    />
  );
}

function UserMenu() {
  const { t } = useI18n();
  const c = claims();
  const name = c?.name ?? c?.preferred_username ?? "";
  return (
    <Menu position="bottom-end" withinPortal>
      <Menu.Target>
        <UnstyledButton aria-label={t("shell.account", { name })} data-testid="user-menu">
          <Text size="sm" fw={500} truncate maw={180} visibleFrom="sm">
            {name}
          </Text>
          <Text size="sm" fw={500} hiddenFrom="sm" aria-hidden="true">
            ☺
          </Text>
        </UnstyledButton>
      </Menu.Target>
      <Menu.Dropdown>
        <Menu.Label>{c?.preferred_username}</Menu.Label>
        <Menu.Item onClick={() => void signOut()}>{t("shell.signOut")}</Menu.Item>
      </Menu.Dropdown>
    </Menu>
  );
}

export function Shell({ access, children }: { access: Access | undefined; children: ReactNode }) {
  const { t } = useI18n();
  const [opened, { toggle, close }] = useDisclosure();
  return (
    <AppShell header={{ height: 56 }} navbar={{ width: 220, breakpoint: "sm", collapsed: { mobile: !opened } }} padding="md">
      <AppShell.Header>
        <Group h="100%" px="md" justify="space-between" wrap="nowrap">
          <Group gap="sm" wrap="nowrap">
            <Burger opened={opened} onClick={toggle} hiddenFrom="sm" size="sm" aria-label={t("shell.menu")} />
            <Title order={2} size="h4">
              svc
            </Title>
          </Group>
          <Group gap="xs" wrap="nowrap">
            <LanguageSwitch />
            <ColorSchemeToggle />
            <UserMenu />
          </Group>
        </Group>
      </AppShell.Header>
      <AppShell.Navbar p="xs" aria-label={t("shell.navigation")}>
        {access ? NAV.filter((i) => i.visible(access)).map((i) => <NavEntry key={i.to} item={i} onNavigate={close} />) : <Loader size="sm" m="md" />}
      </AppShell.Navbar>
      <AppShell.Main>{children}</AppShell.Main>
    </AppShell>
  );
}
