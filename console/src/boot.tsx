// The React half of the start, loaded by main.tsx only when there is something to show (the signed-in app, or a
// notice): React, Mantine and its CSS, the message catalogue. The redirect to the hosted login never waits for it.
import "@mantine/core/styles.css";
import { Alert, Button, Center, type CSSVariablesResolver, createTheme, MantineProvider, Stack, Text, Title } from "@mantine/core";
import { StrictMode } from "react";
import { createRoot, type Root } from "react-dom/client";
import { prefetchAccess } from "./access";
import { App, preloadRoute, queryClient } from "./app";
import { signIn } from "./auth";
import { settings } from "./config";
import { I18nProvider, initialLang } from "./i18n";

// Shades chosen for WCAG AA contrast (4.5:1) of text on buttons, links and secondary text, in both schemes.
const theme = createTheme({
  primaryColor: "blue",
  primaryShade: { light: 8, dark: 8 },
  defaultRadius: "md",
  cursorType: "pointer",
  // An alert's title in its colour's light shade is below 4.5:1 for yellow, orange and red: the text colour instead.
  components: { Alert: Alert.extend({ styles: { title: { color: "var(--mantine-color-text)" } } }) },
});
const contrast: CSSVariablesResolver = (th) => ({
  variables: {},
  light: { "--mantine-color-dimmed": th.colors.gray[7] as string },
  dark: { "--mantine-color-dimmed": th.colors.dark[1] as string },
});
document.documentElement.lang = initialLang();

let root: Root | undefined;

function render(node: React.ReactNode) {
  root ??= createRoot(document.getElementById("root") as HTMLElement);
  root.render(
    <StrictMode>
      <MantineProvider theme={theme} defaultColorScheme="auto" cssVariablesResolver={contrast}>
        <I18nProvider>{node}</I18nProvider>
      </MantineProvider>
    </StrictMode>,
  );
}

/** Outside the React tree (before the catalogue loads): English and German side by side would be noise; English. */
function Notice({ title, text, action }: { title: string; text?: string; action?: string }) {
  return (
    <Center mih="100vh" p="md">
      <Stack align="center" component="main">
        <Title order={1} size="h3">
          {title}
        </Title>
        {text && (
          <Text c="dimmed" role="alert">
            {text}
          </Text>
        )}
        {action && <Button onClick={() => void signIn(`${settings.base}/`)}>{action}</Button>}
      </Stack>
    </Center>
  );
}

export function renderNotice(title: string, text?: string, action?: string): void {
  render(<Notice title={title} text={text} action={action} />);
}

/** Signed in: the questions that decide the navigation go out before the first render. */
export function renderApp(): void {
  preloadRoute(location.pathname.slice(settings.base.length) || "/");
  prefetchAccess(queryClient);
  render(<App />);
}
