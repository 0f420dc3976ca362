// workqueue dashboard: fetches again, every data-every seconds, each part
// of the page marked data-refresh="URL", and swaps in the part of the
// same id from the answer, so that a picture stays current without a
// reload. The answer is the dashboard's own HTML, escaped when it was
// rendered. Nothing else runs.
"use strict";
for (const part of document.querySelectorAll("[data-refresh]")) {
  const id = part.id, url = part.dataset.refresh;
  const every = Math.max(1, Number(part.dataset.every) || 30) * 1000;
  setInterval(async () => {
    try {
      const answer = await fetch(url, { credentials: "same-origin" });
      if (!answer.ok) return;
      const doc = new DOMParser().parseFromString(await answer.text(), "text/html");
      const fresh = doc.getElementById(id), stale = document.getElementById(id);
      if (fresh && stale) stale.replaceWith(document.importNode(fresh, true));
    } catch (e) {
      // The service is away for a moment: the next round tries again.
    }
  }, every);
}
