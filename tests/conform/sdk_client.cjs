// A streaming client on the official `openai` npm SDK with its default retries (maxRetries 2): one turn, each
// function call answered with its call_id (OPENAI_BASE_URL and OPENAI_API_KEY come from the environment).
const OpenAI = require("openai");

async function main() {
  const client = new OpenAI();
  const history = [{ role: "user", content: "What is the weather in Paris?" }];
  for (;;) {
    const final = await client.responses.stream({ model: "gpt-test", input: history }).finalResponse();
    const calls = final.output.filter((item) => item.type === "function_call");
    if (calls.length === 0) return;
    history.push(...final.output);
    history.push(...calls.map((call) => ({ type: "function_call_output", call_id: call.call_id, output: "24 C" })));
  }
}

main().catch((error) => {
  console.error(`${error.constructor.name}: ${error.message}`);
  process.exit(1);
});
