// scripted_model.js — a deterministic local Model for the OpenAI Agents
// SDK (JavaScript), which, unlike the Python SDK, ships no fake model. It
// implements the SDK's own Model interface (getResponse, and
// getStreamedResponse from the same script): each call takes the next
// step of the script (an array of output items, or a function of the
// request returning one) and remembers what it was sent.
import { Usage } from '@openai/agents';

/** An assistant message output item saying `text`. */
export function assistantMessage(text) {
	return { type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text }] };
}

/** A function call output item. */
export function functionCall(name, args, callId) {
	return { type: 'function_call', name, callId, arguments: JSON.stringify(args), status: 'completed' };
}

export class ScriptedModel {
	constructor(steps) {
		this.steps = [...steps];
		this.calls = [];
	}

	async getResponse(request) {
		this.calls.push(request);
		if (!this.steps.length) throw new Error('ScriptedModel: the script is exhausted');
		const step = this.steps.shift();
		const output = typeof step === 'function' ? step(request) : step;
		return { usage: new Usage(), output, responseId: `scripted-${this.calls.length}` };
	}

	async *getStreamedResponse(request) {
		const response = await this.getResponse(request);
		yield { type: 'response_done', response: { id: response.responseId, usage: { requests: 1, inputTokens: 0, outputTokens: 0, totalTokens: 0 }, output: response.output } };
	}

	/** The input the last call was sent. */
	get lastInput() {
		return this.calls.at(-1).input;
	}
}
