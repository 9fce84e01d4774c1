// Starts the console: at /callback it finishes the sign-in, at /signed-out it offers to sign in again, anywhere else
// it signs in first (through the hosted login) and then renders the app.
import "@mantine/core/styles.css";
import { Alert, Button, Center, type CSSVariablesResolver, createTheme, MantineProvider, Stack, Text, Title } from "@mantine/core";
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { App } from "./app";
import { completeSignIn, signIn } from "./auth";
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
const root = createRoot(document.getElementById("root") as HTMLElement);
const route = location.pathname.slice(settings.base.length);
document.documentElement.lang = initialLang();

function render(node: React.ReactNode) {
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

async function start(): Promise<void> {
  // The redirect URIs are registered at the external URL: a console opened at another address moves there first.
  const home = new URL(settings.issuer);
  if (location.origin !== home.origin) {
    location.replace(`${home.origin}${location.pathname}${location.search}`);
    return;
  }
  if (route === "/signed-out") {
    history.replaceState(null, "", `${settings.base}/signed-out`);
    render(<Notice title="Signed out" text="You have been signed out of the svc console." action="Sign in again" />);
    return;
  }
  if (route === "/callback") {
    try {
      const returnTo = await completeSignIn();
      history.replaceState(null, "", returnTo);
    } catch (err) {
      history.replaceState(null, "", `${settings.base}/`);
      render(<Notice title="Sign-in failed" text={err instanceof Error ? err.message : String(err)} action="Try again" />);
      return;
    }
    render(<App />);
    return;
  }
  await signIn();
}

void start();
