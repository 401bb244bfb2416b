// A streaming client on the official `openai` npm SDK with its default retries (maxRetries 2): one turn, each
// function call answered with its call_id (OPENAI_BASE_URL and OPENAI_API_KEY come from the environment). Over
// HTTP (`responses.stream`), or over the SDK's WebSocket (`ResponsesWS`, with the `ws` package) when
// RRKIT_TRANSPORT is `ws`, where a tool output goes back with `previous_response_id`.
const OpenAI = require("openai");

const client = new OpenAI();
const TERMINAL = new Set(["response.completed", "response.failed", "response.incomplete", "error"]);

async function overHttp(history) {
  return client.responses.stream({ model: "gpt-test", input: history }).finalResponse();
}

function overWs() {
  const { ResponsesWS } = require("openai/resources/responses/ws");
  const socket = new ResponsesWS(client);
  const events = socket.stream();
  const send = async (history, newItems, previous) => {
    const request = { type: "response.create", model: "gpt-test", input: newItems };
    socket.send(previous ? { ...request, previous_response_id: previous } : request);
    for (;;) {
      const { value, done } = await events.next();
      if (done || value.type === "close") throw new Error("the socket closed before response.completed");
      if (value.type === "error") throw value.error;
      if (value.type !== "message" || !TERMINAL.has(value.message.type)) continue;
      if (value.message.type !== "response.completed") throw new Error(JSON.stringify(value.message).slice(0, 200));
      return value.message.response;
    }
  };
  return { send, close: () => socket.close() };
}

// The turn's answer (its text), written where the judge asks for it (RRKIT_ANSWER, when it does).
function said(final) {
  if (!process.env.RRKIT_ANSWER) return;
  const text = final.output
    .filter((item) => item.type === "message")
    .flatMap((item) => item.content.filter((part) => part.type === "output_text").map((part) => part.text))
    .join("");
  require("fs").writeFileSync(process.env.RRKIT_ANSWER, text, "utf8");
}

async function turn(send) {
  const history = [{ role: "user", content: "What is the weather in Paris?" }];
  let newItems = history;
  let previous = null;
  for (;;) {
    const final = await send(history, newItems, previous);
    const calls = final.output.filter((item) => item.type === "function_call");
    if (calls.length === 0) return said(final);
    newItems = calls.map((call) => ({ type: "function_call_output", call_id: call.call_id, output: "24 C" }));
    history.push(...final.output, ...newItems);
    previous = final.id;
  }
}

async function main() {
  if (process.env.RRKIT_TRANSPORT !== "ws") return turn(overHttp);
  const socket = overWs();
  try {
    await turn(socket.send);
  } finally {
    socket.close();
  }
}

main().catch((error) => {
  console.error(`${error.constructor.name}: ${error.message}`);
  process.exit(1);
});
