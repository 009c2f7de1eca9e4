#!/usr/bin/env node
// A minimal replay runner in Node (no dependencies): request on stdin, output object on stdout.
// Copy it to .replay/runner.mjs and replace answer() with a call to your agent. Logs go to stderr.
import process from 'node:process';

let raw = '';
for await (const chunk of process.stdin) raw += chunk;
const request = JSON.parse(raw);
const { runId, prompt } = request;
const now = () => new Date().toISOString();

// Stand-in for your agent: "looks up" the prompt and echoes it.
function answer(text) {
  return { response: `Echo: ${text}`, result: { query: text, hits: text.split(/\s+/).length } };
}

const events = [];
const event = (type, payload = {}) => events.push({ seq: events.length + 1, timestamp: now(), type, runId, payload });

process.stderr.write(`echo runner (node): got ${JSON.stringify(prompt)}\n`);
event('run_started', { framework: 'custom' });
event('user_message', { content: prompt });
event('tool_called', { toolName: 'lookup', callId: 'call_1', arguments: { query: prompt } });
const { response, result } = answer(prompt);
event('tool_completed', { toolName: 'lookup', callId: 'call_1', result });
event('assistant_message', { content: response });
event('run_completed');

process.stdout.write(JSON.stringify({
  status: 'ok',
  framework: 'custom',
  response,
  events,
  sources: ['lookup'],
  usage: { inputTokens: prompt.split(/\s+/).length, outputTokens: response.split(/\s+/).length, costUsd: 0 },
}));
