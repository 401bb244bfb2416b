// Every route of the Responses resource walked with the official `openai` npm SDK (OPENAI_BASE_URL and
// OPENAI_API_KEY from the environment): create, retrieve, resume a background stream from `starting_after`,
// cancel, delete, input items, input tokens, compaction, conversations and their items, models (list, delete a
// fine-tune). Prints one JSON object: what each call gave back, as the SDK parsed it; exits 1 naming the call that
// threw.
const OpenAI = require("openai");

const client = new OpenAI({ maxRetries: 0, timeout: 10000 });
const seen = {};
let step = "start";

async function call(name, run) {
  step = name;
  seen[name] = await run();
  return seen[name];
}

async function refused(name, run) {
  step = name;
  try {
    await run();
    seen[name] = "not refused";
  } catch (error) {
    seen[name] = error.status;
  }
}

async function main() {
  const created = await call("create", () => client.responses.create({ model: "gpt-test", input: "hi" }));
  await call("retrieve", async () => (await client.responses.retrieve(created.id)).status);
  await call("input_items", async () => {
    const items = [];
    for await (const item of client.responses.inputItems.list(created.id, { order: "asc", limit: 1 })) items.push(item.type);
    return items;
  });
  await call("input_tokens", async () => (await client.responses.inputTokens.count({ model: "gpt-test", input: "hi" })).object);
  await call("compact", async () =>
    (await client.responses.compact({ model: "gpt-test", input: [{ role: "user", content: "hi" }] })).output.map((o) => o.type),
  );
  const background = await client.responses.create({ model: "gpt-test", input: "go", background: true });
  await call("background", () => background.status);
  for (let poll = 0; poll < 200; poll += 1) {
    const status = (await client.responses.retrieve(background.id)).status;
    if (!["queued", "in_progress"].includes(status)) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await call("resumed", async () => {
    const numbers = [];
    const stream = await client.responses.retrieve(background.id, { stream: true, starting_after: 2 });
    for await (const event of stream) numbers.push(event.sequence_number);
    return numbers;
  });
  await refused("cancel_finished", () => client.responses.cancel(background.id));
  await call("delete", async () => { await client.responses.delete(created.id); return "done"; });
  await refused("retrieve_deleted", () => client.responses.retrieve(created.id));
  const conversation = await call("conversation", () =>
    client.conversations.create({ items: [{ type: "message", role: "user", content: "first" }], metadata: { a: "b" } }),
  );
  await client.responses.create({ model: "gpt-test", input: "second", conversation: conversation.id });
  await call("conversation_items", async () => {
    const items = [];
    for await (const item of client.conversations.items.list(conversation.id, { order: "asc" })) items.push(item.role);
    return items;
  });
  await call("conversation_deleted", async () => (await client.conversations.delete(conversation.id)).deleted);
  await call("models", async () => {
    const models = [];
    for await (const model of client.models.list()) models.push(model.id);
    return models;
  });
  await call("model_deleted", async () => (await client.models.delete("ft:gpt-4o-mini:acemeco:suffix:abc123")).deleted);
  console.log(JSON.stringify({ ...seen, create: seen.create.status, conversation: seen.conversation.object }));
}

main().catch((error) => {
  console.error(`${step}: ${error}`);
  process.exit(1);
});
