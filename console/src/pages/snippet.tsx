// A block of configuration with a copy button, and the tabs of an application's snippets.
import { Button, Code, CopyButton, Stack, Tabs } from "@mantine/core";
import { useI18n } from "../i18n";
import type { Snippets } from "./app-snippets";

export function Snippet({ code }: { code: string }) {
  const { t } = useI18n();
  return (
    <Stack gap="xs">
      <Code block style={{ whiteSpace: "pre-wrap", wordBreak: "break-all" }}>
        {code}
      </Code>
      <CopyButton value={code}>
        {({ copied, copy }) => (
          <Button variant="default" size="xs" onClick={copy} w="fit-content">
            {copied ? t("action.copied") : t("action.copy")}
          </Button>
        )}
      </CopyButton>
    </Stack>
  );
}

export function SnippetTabs({ code }: { code: Snippets }) {
  return (
    <Tabs defaultValue="openid">
      <Tabs.List>
        <Tabs.Tab value="openid">openid-client</Tabs.Tab>
        {code.authjs && <Tabs.Tab value="authjs">Auth.js</Tabs.Tab>}
        {code.spring && <Tabs.Tab value="spring">Spring Security</Tabs.Tab>}
      </Tabs.List>
      <Tabs.Panel value="openid" pt="sm">
        <Snippet code={code.openid} />
      </Tabs.Panel>
      {code.authjs && (
        <Tabs.Panel value="authjs" pt="sm">
          <Snippet code={code.authjs} />
        </Tabs.Panel>
      )}
      {code.spring && (
        <Tabs.Panel value="spring" pt="sm">
          <Snippet code={code.spring} />
        </Tabs.Panel>
      )}
    </Tabs>
  );
}
