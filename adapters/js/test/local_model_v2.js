// local_model_v2.js — a deterministic local language model for Mastra's
// agents. Mastra 0.24 runs AI SDK models of specification v2; its own mock
// (@mastra/core/test-utils/llm-mock) needs `msw`, a package of the AI SDK's
// test utilities that Mastra does not install. This implements the v2
// model interface itself (doGenerate and doStream from one script) and
// remembers every prompt it was sent. A step is a function of the prompt
// returning a string (the answer) or {tool, input} (a tool call).
const usage = { inputTokens: 1, outputTokens: 1, totalTokens: 2 };

export class LocalModelV2 {
	specificationVersion = 'v2';
	provider = 'local';
	modelId = 'scripted';
	supportedUrls = {};

	constructor(...steps) {
		this.steps = steps;
		this.prompts = [];
	}

	#next(options) {
		this.prompts.push(options.prompt);
		const step = this.steps.length > 1 ? this.steps.shift() : this.steps[0];
		const out = typeof step === 'function' ? step(options.prompt) : step;
		if (typeof out === 'string') return { content: [{ type: 'text', text: out }], finishReason: 'stop' };
		const call = { type: 'tool-call', toolCallId: `call-${this.prompts.length}`, toolName: out.tool, input: JSON.stringify(out.input) };
		return { content: [call], finishReason: 'tool-calls' };
	}

	async doGenerate(options) {
		return { ...this.#next(options), usage, warnings: [] };
	}

	async doStream(options) {
		const { content, finishReason } = this.#next(options);
		const parts = [{ type: 'stream-start', warnings: [] },
			{ type: 'response-metadata', id: `r-${this.prompts.length}`, modelId: this.modelId, timestamp: new Date(0) }];
		for (const c of content) {
			if (c.type === 'text') parts.push({ type: 'text-start', id: 't' }, { type: 'text-delta', id: 't', delta: c.text }, { type: 'text-end', id: 't' });
			else parts.push(c);
		}
		parts.push({ type: 'finish', finishReason, usage });
		return { stream: new ReadableStream({ start(controller) { for (const p of parts) controller.enqueue(p); controller.close(); } }) };
	}

	/** The text of every message of the last prompt, by role. */
	get lastPrompt() {
		return this.prompts.at(-1).map((m) => [m.role, typeof m.content === 'string' ? m.content
			: m.content.map((p) => p.text ?? (p.output ? JSON.stringify(p.output.value) : '')).join('')]);
	}
}
