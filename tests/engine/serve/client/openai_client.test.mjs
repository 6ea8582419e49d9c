// archrun serve driven by the openai package from the npm registry: a
// server started on 127.0.0.1 for stories260K (a real trained Llama, its
// tokenizer, a small chat template) and one for the BERT golden
// (embeddings), stopped at the end. Streamed and plain chat, completions,
// embeddings, and errors surfaced as the client's own exceptions.
//   ARCHRUN=build/archrun ARCHETYPE_SHARED_DIR=../shared node openai_client.test.mjs
import { spawn } from 'node:child_process';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync, existsSync, rmSync, symlinkSync } from 'node:fs';
import { deflateSync, crc32 } from 'node:zlib';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

const shared = process.env.ARCHETYPE_SHARED_DIR;
const archrun = process.env.ARCHRUN;
const required = !!process.env.ARCHETYPE_REQUIRE_SHARED;
function skip(why) {
  console.log(`!!! SKIPPED: ${why}; the openai client tests did NOT run !!!`);
  process.exit(required ? 1 : 77);
}
let OpenAI;
try {
  OpenAI = (await import('openai')).default;
} catch {
  skip(`the openai package is not installed beside this file (npm ci in ${import.meta.dirname ?? '.'})`);
}
const stories = join(shared ?? '', 'models/stories260K');
const bert = join(shared ?? '', 'golden/bert');
if (!shared || !existsSync(stories) || !existsSync(bert)) skip(`reference data ${stories} is absent`);

const scratch = mkdtempSync(join(tmpdir(), 'serve-client-'));
const template = join(scratch, 'chat.jinja');
writeFileSync(template, "{{ bos_token }}{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}");

// archrun serve on any free port: resolves with the port it printed.
function serve(model, ...args) {
  const child = spawn(archrun, ['serve', model, '--port', '0', ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/listening on [^:]+:(\d+)/);
      if (m) resolve(Number(m[1]));
    });
    child.on('exit', (code) => reject(new Error(`archrun serve exited with ${code} before listening`)));
  });
  return { child, port };
}

// A template that takes tools and writes a call as <tool_call>{...}</tool_call>.
const toolTemplate = join(scratch, 'tools.jinja');
writeFileSync(toolTemplate, "{{ bos_token }}{% if tools %}system: tools: {% for t in tools %}{{ t.function.name }} {% endfor %}\n{% endif %}" +
  "{% for m in messages %}{% if m.role == 'tool' %}tool: {{ m.content }}\n{% elif m.tool_calls %}assistant: " +
  "{% for c in m.tool_calls %}<tool_call>{{ c.function | tojson }}</tool_call>{% endfor %}\n{% else %}{{ m.role }}: {{ m.content }}\n" +
  "{% endif %}{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}");

// A vision-language model to chat with images: the llava golden (CLIP,
// projector, Llama) with a word-level tokenizer of its 512 ids ("<image>"
// is id 500) and a chat template that writes an image part as <image>.
const llavaGolden = join(shared, 'golden/llava');
const llava = join(scratch, 'llava');
mkdirSync(llava);
for (const f of ['config.json', 'model.safetensors', 'generation_config.json']) symlinkSync(join(llavaGolden, f), join(llava, f));
const vocab = { '<unk>': 0, '<s>': 1, '</s>': 2 };
for (let i = 3; i < 512; i++) vocab[i === 500 ? '<image>' : `w${i}`] = i;
const special = (id, content) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });
writeFileSync(join(llava, 'tokenizer.json'), JSON.stringify({
  version: '1.0', truncation: null, padding: null, added_tokens: [special(0, '<unk>'), special(1, '<s>'), special(2, '</s>'), special(500, '<image>')],
  normalizer: null, pre_tokenizer: { type: 'Whitespace' }, post_processor: null, decoder: null,
  model: { type: 'WordLevel', vocab, unk_token: '<unk>' } }));
const imageTemplate = "{{ bos_token }}{% for m in messages %}{{ m['role'] }}: {% if m['content'] is string %}{{ m['content'] }}{% else %}" +
  "{% for p in m['content'] %}{% if p['type'] == 'image' %}<image> {% else %}{{ p['text'] }}{% endif %}{% endfor %}{% endif %}{{ '\\n' }}" +
  "{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}";
writeFileSync(join(llava, 'tokenizer_config.json'), JSON.stringify({ bos_token: '<s>', eos_token: '</s>', chat_template: imageTemplate }));

// An RGB PNG of seeded colours, written by hand (zlib's deflate and crc32).
function png(width, height, seed) {
  const rows = [];
  for (let y = 0; y < height; y++) {
    const row = Buffer.alloc(1 + 3 * width);  // filter 0, then RGB
    for (let i = 1; i < row.length; i++) row[i] = (seed = (seed * 1103515245 + 12345) >>> 0) >>> 24;
    rows.push(row);
  }
  const chunk = (type, data) => {
    const head = Buffer.alloc(8);
    head.writeUInt32BE(data.length, 0);
    head.write(type, 4, 'latin1');
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0);
    return Buffer.concat([head, data, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8, ihdr[9] = 2;  // 8 bits, RGB
  return Buffer.concat([Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]), chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(Buffer.concat(rows))), chunk('IEND', Buffer.alloc(0))]);
}

const servers = [];
let chat, open, embed, busy, tooled, seeing;
before(async () => {
  const s = serve(stories, '--chat-template', template, '--api-key', 'sesame', '--parallel', '4');
  const e = serve(bert);
  const b = serve(stories, '--parallel', '1', '--queue', '1');
  const t = serve(stories, '--chat-template', toolTemplate);
  const v = serve(llava, '--parallel', '2');
  servers.push(s.child, e.child, b.child, t.child, v.child);
  const [sp, ep, bp, tp, vp] = await Promise.all([s.port, e.port, b.port, t.port, v.port]);
  seeing = new OpenAI({ baseURL: `http://127.0.0.1:${vp}/v1`, apiKey: 'none', maxRetries: 0 });
  tooled = new OpenAI({ baseURL: `http://127.0.0.1:${tp}/v1`, apiKey: 'none' });
  chat = new OpenAI({ baseURL: `http://127.0.0.1:${sp}/v1`, apiKey: 'sesame' });
  open = new OpenAI({ baseURL: `http://127.0.0.1:${sp}/v1`, apiKey: 'wrong', maxRetries: 0 });
  embed = new OpenAI({ baseURL: `http://127.0.0.1:${ep}/v1`, apiKey: 'none' });
  busy = new OpenAI({ baseURL: `http://127.0.0.1:${bp}/v1`, apiKey: 'none', maxRetries: 0 });
});
after(() => {
  for (const c of servers) c.kill('SIGTERM');
  rmSync(scratch, { recursive: true, force: true });
});

test('models.list names the model', async () => {
  const models = [];
  for await (const m of chat.models.list()) models.push(m.id);
  assert.deepEqual(models, ['stories260K']);
});

test('chat, plain and streamed, give the same greedy reply', async () => {
  const ask = { model: 'stories260K', messages: [{ role: 'user', content: 'Tell me a story.' }], max_tokens: 30, temperature: 0 };
  const plain = await chat.chat.completions.create(ask);
  assert.equal(plain.object, 'chat.completion');
  assert.equal(plain.choices[0].message.role, 'assistant');
  const text = plain.choices[0].message.content;
  assert.ok(text.length > 0);
  assert.equal(plain.usage.completion_tokens, 30);
  assert.equal(plain.usage.total_tokens, plain.usage.prompt_tokens + 30);
  assert.equal(plain.choices[0].finish_reason, 'length');

  const stream = await chat.chat.completions.create({ ...ask, stream: true });
  let streamed = '';
  let chunks = 0;
  let finish = null;
  for await (const chunk of stream) {
    chunks++;
    streamed += chunk.choices[0]?.delta?.content ?? '';
    finish = chunk.choices[0]?.finish_reason ?? finish;
  }
  assert.ok(chunks > 2, `${chunks} chunks`);
  assert.equal(streamed, text);
  assert.equal(finish, 'length');
});

test('completions, with a stop string', async () => {
  const free = await chat.completions.create({ model: 'stories260K', prompt: 'Once upon a time', max_tokens: 40, temperature: 0 });
  const text = free.choices[0].text;
  assert.match(text, /Lily/);
  const stopped = await chat.completions.create({ model: 'stories260K', prompt: 'Once upon a time', max_tokens: 40, temperature: 0, stop: ['Lily'] });
  assert.equal(stopped.choices[0].text, text.slice(0, text.indexOf('Lily')));
  assert.equal(stopped.choices[0].finish_reason, 'stop');
  const stream = await chat.completions.create({ model: 'stories260K', prompt: 'Once upon a time', max_tokens: 40, temperature: 0, stream: true });
  let streamed = '';
  for await (const chunk of stream) streamed += chunk.choices[0]?.text ?? '';
  assert.equal(streamed, text);
});

test('a seeded sampled completion repeats', async () => {
  const ask = { model: 'stories260K', prompt: 'The cat', max_tokens: 20, temperature: 0.9, top_p: 0.9, seed: 7 };
  const a = await chat.completions.create(ask);
  const b = await chat.completions.create(ask);
  assert.equal(a.choices[0].text, b.choices[0].text);
});

test('a chat reply under a frequency penalty and a banned token', async () => {
  const ask = { model: 'stories260K', messages: [{ role: 'user', content: 'Tell me a story.' }], max_tokens: 30, temperature: 0 };
  const free = await chat.chat.completions.create(ask);
  const penalised = await chat.chat.completions.create({ ...ask, frequency_penalty: 1.0, presence_penalty: 0.5 });
  assert.notEqual(penalised.choices[0].message.content, free.choices[0].message.content);
  // The free reply's first token (as ids: its completion's first) banned.
  const ids = await chat.completions.create({ model: 'stories260K', prompt: 'Once upon a time', max_tokens: 8, temperature: 0 });
  const first = ids.choices[0].tokens[0];
  const banned = await chat.completions.create({ model: 'stories260K', prompt: 'Once upon a time', max_tokens: 8, temperature: 0,
    logit_bias: { [first]: -100 } });
  assert.ok(!banned.choices[0].tokens.includes(first), JSON.stringify(banned.choices[0]));
  await assert.rejects(chat.chat.completions.create({ ...ask, presence_penalty: 3 }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'presence_penalty');
});

test('structured output: each chat reply parses and validates against its schema', async () => {
  const schema = {
    type: 'object',
    properties: { name: { type: 'string', maxLength: 10 }, age: { type: 'integer' }, pets: { type: 'array', items: { enum: ['cat', 'dog'] }, maxItems: 2 } },
    required: ['name', 'age'],
  };
  // This test's own check of the schema (not the server's grammar).
  const fits = (v) => v !== null && typeof v === 'object' && !Array.isArray(v) && typeof v.name === 'string' && [...v.name].length <= 10 &&
    Number.isInteger(v.age) && Object.keys(v).every((k) => ['name', 'age', 'pets'].includes(k)) &&
    (v.pets === undefined || (Array.isArray(v.pets) && v.pets.length <= 2 && v.pets.every((p) => p === 'cat' || p === 'dog')));
  let whole = 0;
  for (const [temperature, seed] of [[0, 1], [0.7, 2], [1.0, 3], [1.2, 4]]) {
    const r = await chat.chat.completions.create({ model: 'stories260K', messages: [{ role: 'user', content: 'Who are you?' }],
      max_tokens: 160, temperature, seed, response_format: { type: 'json_schema', json_schema: { name: 'person', schema } } });
    if (r.choices[0].finish_reason !== 'stop') continue;  // cut by max_tokens
    whole += 1;
    const reply = r.choices[0].message.content;
    assert.ok(fits(JSON.parse(reply)), reply);
  }
  assert.ok(whole >= 3, `${whole} of 4 replies ended within 160 tokens`);
  const any = await chat.chat.completions.create({ model: 'stories260K', messages: [{ role: 'user', content: 'hi' }], max_tokens: 160,
    temperature: 0, response_format: { type: 'json_object' } });
  if (any.choices[0].finish_reason === 'stop') assert.equal(typeof JSON.parse(any.choices[0].message.content), 'object');
  await assert.rejects(chat.chat.completions.create({ model: 'stories260K', messages: [{ role: 'user', content: 'hi' }],
    response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'string', format: 'date' } } } }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'response_format' && /'format' is not supported/.test(e.message));
});

test('a tool call round trip: the call, the tool message, the final answer', async () => {
  const tools = [{ type: 'function', function: { name: 'get_weather', description: 'the weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string', maxLength: 12 } }, required: ['city'] } } }];
  const messages = [{ role: 'user', content: 'What is the weather in Paris?' }];
  const first = await tooled.chat.completions.create({ model: 'stories260K', messages, tools, tool_choice: 'required', max_tokens: 120, temperature: 0 });
  assert.equal(first.choices[0].finish_reason, 'tool_calls', JSON.stringify(first.choices[0]));
  const call = first.choices[0].message.tool_calls[0];
  assert.equal(call.type, 'function');
  assert.equal(call.function.name, 'get_weather');
  const args = JSON.parse(call.function.arguments);
  assert.equal(typeof args.city, 'string');
  assert.ok([...args.city].length <= 12, call.function.arguments);
  messages.push(first.choices[0].message);
  messages.push({ role: 'tool', tool_call_id: call.id, content: 'sunny, 21 C' });
  const answer = await tooled.chat.completions.create({ model: 'stories260K', messages, tools, max_tokens: 16, temperature: 0 });
  assert.ok(answer.usage.prompt_tokens > first.usage.prompt_tokens);
  assert.ok(answer.choices[0].message.content !== undefined);
  // Streamed: the call arrives as a tool_calls delta.
  const stream = await tooled.chat.completions.create({ model: 'stories260K', messages: messages.slice(0, 1), tools,
    tool_choice: { type: 'function', function: { name: 'get_weather' } }, max_tokens: 120, temperature: 0, stream: true });
  let name = '', finish = '';
  for await (const chunk of stream) {
    for (const d of chunk.choices[0]?.delta?.tool_calls ?? []) name += d.function?.name ?? '';
    finish = chunk.choices[0]?.finish_reason ?? finish;
  }
  assert.equal(name, 'get_weather');
  assert.equal(finish, 'tool_calls');
  await assert.rejects(chat.chat.completions.create({ model: 'stories260K', messages: [{ role: 'user', content: 'hi' }], tools }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'tools');
});

test('logprobs, chat and completions', async () => {
  const r = await chat.chat.completions.create({ model: 'stories260K', messages: [{ role: 'user', content: 'Tell me a story.' }],
    max_tokens: 12, temperature: 0, logprobs: true, top_logprobs: 3 });
  const content = r.choices[0].logprobs.content;
  assert.equal(content.length, r.usage.completion_tokens);
  for (const t of content) {
    assert.equal(t.top_logprobs.length, 3);
    assert.equal(t.top_logprobs[0].logprob, t.logprob);  // greedy: the likeliest
    assert.ok(t.logprob <= 0 && t.top_logprobs[1].logprob <= t.top_logprobs[0].logprob);
  }
  const c = await chat.completions.create({ model: 'stories260K', prompt: 'Once upon a time', max_tokens: 5, temperature: 0, logprobs: 2 });
  assert.equal(c.choices[0].logprobs.token_logprobs.length, 5);
  assert.equal(Object.keys(c.choices[0].logprobs.top_logprobs[0]).length, 2);
});

test('embeddings (the client asks for base64 and decodes it)', async () => {
  const r = await embed.embeddings.create({ model: 'bert', input: [[1, 5, 9, 2], [1, 7, 2]] });
  assert.equal(r.data.length, 2);
  assert.equal(r.data[0].embedding.length, 64);
  const norm = Math.hypot(...r.data[0].embedding);
  assert.ok(Math.abs(norm - 1) < 1e-5, `norm ${norm}`);
  const floats = await embed.embeddings.create({ model: 'bert', input: [1, 5, 9, 2], encoding_format: 'float' });
  for (let i = 0; i < 64; i++) assert.ok(Math.abs(floats.data[0].embedding[i] - r.data[0].embedding[i]) < 1e-7);
  assert.equal(r.usage.prompt_tokens, 7);
});

test('errors are the client\'s own exceptions', async () => {
  await assert.rejects(open.chat.completions.create({ model: 'stories260K', messages: [{ role: 'user', content: 'hi' }] }),
    (e) => e instanceof OpenAI.AuthenticationError && e.status === 401 && e.code === 'invalid_api_key');
  await assert.rejects(chat.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }),
    (e) => e instanceof OpenAI.NotFoundError && e.code === 'model_not_found');
  await assert.rejects(chat.completions.create({ model: 'stories260K', prompt: 'hi', max_tokens: -1 }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'max_tokens');
  await assert.rejects(chat.completions.create({ model: 'stories260K', prompt: 'hi', max_tokens: 100000 }),
    (e) => e instanceof OpenAI.BadRequestError && e.code === 'context_length_exceeded');
  await assert.rejects(chat.chat.completions.create({ model: 'stories260K', messages: 'hi' }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'messages');
  await assert.rejects(embed.completions.create({ model: 'bert', prompt: 'hi' }),
    (e) => e instanceof OpenAI.BadRequestError && /does not generate/.test(e.message));
});

test('past the queue: 503, as the client\'s error', async () => {
  const ask = () => busy.completions.create({ model: 'stories260K', prompt: 'Once upon a time', max_tokens: 500, ignore_eos: true });
  const results = await Promise.allSettled(Array.from({ length: 16 }, ask));
  const refused = results.filter((r) => r.status === 'rejected');
  assert.ok(refused.length >= 1, 'some were refused');
  assert.ok(results.some((r) => r.status === 'fulfilled'), 'some were served');
  for (const r of refused) assert.ok(r.reason instanceof OpenAI.InternalServerError && r.reason.status === 503, String(r.reason));
});

test('an image in chat: image_url data URLs, the reply archrun generate --image gives, batched beside text', async () => {
  const images = [png(40, 36, 7), png(40, 36, 99)];
  const replies = [];
  for (const [k, bytes] of images.entries()) {
    const path = join(scratch, `image${k}.png`);
    writeFileSync(path, bytes);
    const url = `data:image/png;base64,${bytes.toString('base64')}`;
    const ask = { model: 'llava', max_tokens: 8, temperature: 0,
      messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url } }, { type: 'text', text: 'w5 w7 w9' }] }] };
    // Beside a text-only chat in the same batch.
    const [r, text] = await Promise.all([seeing.chat.completions.create(ask),
      seeing.chat.completions.create({ model: 'llava', max_tokens: 8, temperature: 0, messages: [{ role: 'user', content: 'w5 w7 w9' }] })]);
    assert.ok(text.choices[0].message.content.length > 0);
    // The same prompt through the command line: the template's rendering
    // (this tokenizer adds no <s> of its own), the image file.
    const cli = spawnSync(archrun, ['generate', llava, '-p', '<s>user: <image> w5 w7 w9\nassistant:', '--image', path, '-n', '8', '--json'],
      { encoding: 'utf8' });
    assert.equal(cli.status, 0, cli.stderr);
    const want = JSON.parse(cli.stdout.trim().split('\n').pop());
    assert.equal(r.usage.prompt_tokens, want.prompt_tokens.length);
    assert.ok(r.usage.prompt_tokens >= 16, 'the image is 16 tokens');
    assert.equal(r.choices[0].message.content, want.text);
    // Streamed, the same.
    let streamed = '';
    for await (const c of await seeing.chat.completions.create({ ...ask, stream: true })) streamed += c.choices[0]?.delta?.content ?? '';
    assert.equal(streamed, want.text);
    replies.push(want.tokens.join(' '));
  }
  assert.notEqual(replies[0], replies[1], 'two images, two replies');
});

test('images that cannot be served are 400s naming the field', async () => {
  const part = (url) => [{ role: 'user', content: [{ type: 'text', text: 'w5' }, { type: 'image_url', image_url: { url } }] }];
  await assert.rejects(seeing.chat.completions.create({ model: 'llava', messages: part('data:image/png;base64,AAAAAAAA') }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'messages[0].content[1].image_url' && /not an image/.test(e.message));
  await assert.rejects(seeing.chat.completions.create({ model: 'llava', messages: part('https://example.com/cat.png') }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'messages[0].content[1].image_url' && /fetches nothing/.test(e.message));
  const url = `data:image/png;base64,${png(8, 8, 1).toString('base64')}`;
  await assert.rejects(chat.chat.completions.create({ model: 'stories260K', messages: part(url) }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'messages[0].content[1].image_url' && /takes no image/.test(e.message));
  // More images than the context holds (16 tokens each, 4096 positions): refused before any is decoded.
  const many = Array.from({ length: 300 }, () => ({ type: 'image_url', image_url: { url } }));
  await assert.rejects(seeing.chat.completions.create({ model: 'llava', messages: [{ role: 'user', content: many }] }),
    (e) => e instanceof OpenAI.BadRequestError && e.code === 'context_length_exceeded');
});
