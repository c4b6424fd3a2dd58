// Who runs a skill once it is rendered (docs/contexts.md, "Skills"). `render` is deterministic and offline: it
// answers the rendered prompt, for agents that run the model themselves. `model` sends the messages to an
// OpenAI-compatible chat-completions endpoint the operator configured, through the official `openai` client.
import OpenAI from 'openai';
import type { Config, SkillExecutor, SkillMessage } from '../../contracts/index.ts';

export interface ExecutorAnswer {
  output: string;
  /** The model that answered, as the endpoint named it; null when no model ran. */
  model: string | null;
  usage: { prompt_tokens: number; completion_tokens: number } | null;
}

export interface SkillRunner {
  run(messages: SkillMessage[], signal: AbortSignal): Promise<ExecutorAnswer>;
}

/** Why an execution failed, worded for the caller. */
export class ExecutionFailed extends Error {
  constructor(
    message: string,
    readonly timedOut = false,
  ) {
    super(message);
  }
}

export const renderRunner: SkillRunner = {
  async run(messages) {
    return { output: messages[0]!.content, model: null, usage: null };
  },
};

export class ModelRunner implements SkillRunner {
  readonly #client: OpenAI;

  constructor(
    baseURL: string,
    apiKey: string,
    private readonly model: string,
  ) {
    // One attempt: the execution's deadline is the caller's, and a retry would spend it twice.
    this.#client = new OpenAI({ baseURL, apiKey: apiKey || 'none', maxRetries: 0 });
  }

  async run(messages: SkillMessage[], signal: AbortSignal): Promise<ExecutorAnswer> {
    let answer: OpenAI.Chat.Completions.ChatCompletion;
    try {
      answer = await this.#client.chat.completions.create({ model: this.model, messages }, { signal });
    } catch (err) {
      if (signal.aborted) throw new ExecutionFailed('the model did not answer in time', true);
      const status = (err as { status?: number }).status;
      throw new ExecutionFailed(
        status ? `the model endpoint answered HTTP ${status}` : 'the model endpoint could not be reached',
      );
    }
    const output = answer.choices?.[0]?.message?.content;
    if (typeof output !== 'string') throw new ExecutionFailed('the model endpoint answered without a message');
    return {
      output,
      model: answer.model ?? this.model,
      usage: answer.usage
        ? { prompt_tokens: answer.usage.prompt_tokens, completion_tokens: answer.usage.completion_tokens }
        : null,
    };
  }
}

/** The runners this deployment has: `model` only when the operator configured an endpoint. */
export function runnersFromConfig(config: Config): Record<SkillExecutor, SkillRunner | null> {
  const model =
    config.skillModelUrl === ''
      ? null
      : new ModelRunner(config.skillModelUrl, config.skillModelApiKey, config.skillModel || 'default');
  return { render: renderRunner, model };
}
