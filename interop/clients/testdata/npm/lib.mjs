// Shared by the suite's node scripts: the target (an MCP URL or the path of
// vigil-everything, served over stdio), a watchdog, step logging, and the
// server's fixed outputs.

export const MODERN = '2026-07-28';
export const LEGACY = '2025-11-25';

// parseTarget reads "<url|binary> <era>" from argv.
export function parseTarget(name) {
  const [target, era] = process.argv.slice(2);
  if (!target || ![LEGACY, MODERN].includes(era)) {
    console.error(`usage: node ${name}.mjs <http://HOST:PORT/mcp | path-to-vigil-everything> ${LEGACY}|${MODERN}`);
    process.exit(2);
  }
  const kind = /^https?:\/\//.test(target) ? 'http' : 'stdio';
  return { target, era, kind };
}

// watchdog fails the run if it has not ended within ms.
export function watchdog(ms) {
  setTimeout(() => {
    console.error(`FAIL: timed out after ${ms}ms`);
    process.exit(1);
  }, ms).unref();
}

// stepper returns a function that prints one line per step.
export function stepper(prefix) {
  return (msg) => console.log(`${prefix}: ${msg}`);
}

// text joins the text blocks of an MCP result's content.
export function text(content) {
  return (content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('');
}

// watchingFetch returns a fetch that calls onGet once a GET (the client's
// standalone SSE stream) got a 200; it watches the client's requests and
// changes none.
export function watchingFetch(onGet) {
  let said = false;
  return async (input, init) => {
    const res = await fetch(input, init);
    if ((init?.method ?? 'GET') === 'GET' && res.status === 200 && !said) {
      said = true;
      onGet();
    }
    return res;
  };
}

export const SIMPLE_TEXT = 'This is a simple text response for testing.';
export const STATIC_TEXT = 'This is the content of the static text resource.';
export const ELICITED = { username: 'ada', email: 'ada@example.com' };
export const ELICITED_TEXT = 'User response: action=accept, content={"email":"ada@example.com","username":"ada"}';
