// Front-channel logout (src/http/oauth/frontchannel.ts): continue once every application's logout frame has loaded,
// or after the page's wait at the latest.
(() => {
  const next = document.getElementById("frontchannel-next")?.getAttribute("href");
  if (!next) return;
  const frames = [...document.querySelectorAll("iframe.frontchannel")];
  const wait = Number(document.currentScript?.dataset.wait ?? "5") * 1000;
  let left = frames.length;
  let gone = false;
  const go = () => {
    if (gone) return;
    gone = true;
    window.location.replace(next);
  };
  for (const f of frames) {
    f.addEventListener("load", () => {
      left -= 1;
      if (left <= 0) go();
    });
  }
  if (left === 0) go();
  setTimeout(go, wait);
})();
