// Skills of the context-file API (docs/contexts.md, "Skills"): a stored, versioned prompt template of one owner,
// with `{{variable}}` placeholders, that brings context files along. The records, the bodies of the routes, the
// answer of an execution, and the internal commands to the owner's actor and the skills service.
import Type, { type Static } from 'typebox';
import { Uuid } from './schemas.ts';

export const skillTemplateBytesMax = 65_536;
export const skillContextsMax = 20;
export const skillInputBytesMax = 65_536;
export const skillVariablesMax = 50;

/** A variable's name in a template: `{{ name }}`. */
export const skillVariableName = '^[A-Za-z_][A-Za-z0-9_]{0,63}$';

/** Who runs a skill: `render` returns the prompt (the caller runs the model), `model` asks the operator's model. */
export const SkillExecutor = Type.Union([Type.Literal('render'), Type.Literal('model')]);
export type SkillExecutor = Static<typeof SkillExecutor>;

/** One version of a skill as its owner's actor keeps it (the template's text is in the fact that saved it). */
export const SkillRecord = Type.Object({
  id: Uuid(),
  name: Type.String(),
  description: Type.String(),
  version: Type.Integer({ minimum: 1 }),
  executor: SkillExecutor,
  /** The template's variables, in order of first use. */
  variables: Type.Array(Type.String()),
  /** Context files the skill brings, in order: the owner's, or other owners' public ones. */
  contextIds: Type.Array(Uuid()),
  templateSha256: Type.String(),
  createdAt: Type.String(),
  updatedAt: Type.String(),
});
export type SkillRecord = Static<typeof SkillRecord>;

const Name = Type.String({ minLength: 1, maxLength: 200 });
const Description = Type.String({ maxLength: 2000 });
const Template = Type.String({
  minLength: 1,
  description: `The prompt, at most ${skillTemplateBytesMax} UTF-8 bytes; {{name}} marks a variable.`,
});
const Contexts = Type.Array(Uuid(), {
  maxItems: skillContextsMax,
  uniqueItems: true,
  description: 'Ids of context files brought along, in order: yours, or public ones of other owners.',
});

export const SkillCreateBody = Type.Object(
  {
    name: Name,
    template: Template,
    description: Type.Optional(Description),
    contexts: Type.Optional(Contexts),
    executor: Type.Optional(SkillExecutor),
  },
  { additionalProperties: false },
);
export type SkillCreateBody = Static<typeof SkillCreateBody>;

/** Any change makes the next version; earlier versions stay executable. */
export const SkillPatchBody = Type.Object(
  {
    name: Type.Optional(Name),
    template: Type.Optional(Template),
    description: Type.Optional(Description),
    contexts: Type.Optional(Contexts),
    executor: Type.Optional(SkillExecutor),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type SkillPatchBody = Static<typeof SkillPatchBody>;

export const SkillExecuteBody = Type.Object(
  {
    input: Type.String({ description: `The task: the user message, at most ${skillInputBytesMax} UTF-8 bytes.` }),
    variables: Type.Optional(
      Type.Record(Type.String(), Type.String(), {
        maxProperties: skillVariablesMax,
        description: "A value for each of the template's variables, and nothing else.",
      }),
    ),
    version: Type.Optional(Type.Integer({ minimum: 1, description: 'Run this version; the newest by default.' })),
  },
  { additionalProperties: false },
);
export type SkillExecuteBody = Static<typeof SkillExecuteBody>;

/** A skill as the API shows it; `template` is on one skill, not in a list. */
export const SkillView = Type.Object({
  id: Uuid(),
  name: Type.String(),
  description: Type.String(),
  version: Type.Integer(),
  executor: SkillExecutor,
  variables: Type.Array(Type.String()),
  contexts: Type.Array(Uuid()),
  template: Type.Optional(Type.String()),
  template_sha256: Type.String(),
  created_at: Type.String(),
  updated_at: Type.String(),
});
export type SkillView = Static<typeof SkillView>;

export function skillView(r: SkillRecord, template: string | null): SkillView {
  return {
    id: r.id,
    name: r.name,
    description: r.description,
    version: r.version,
    executor: r.executor,
    variables: r.variables,
    contexts: r.contextIds,
    ...(template === null ? {} : { template }),
    template_sha256: r.templateSha256,
    created_at: r.createdAt,
    updated_at: r.updatedAt,
  };
}

export const SkillMessage = Type.Object({
  role: Type.Union([Type.Literal('system'), Type.Literal('user')]),
  content: Type.String(),
});
export type SkillMessage = Static<typeof SkillMessage>;

/** A context file as an execution used it: which text, exactly. */
export const SkillContextUsed = Type.Object({
  id: Uuid(),
  name: Type.String(),
  slug: Type.String(),
  sha256: Type.String(),
  updated_at: Type.String(),
  owned: Type.Boolean(),
});
export type SkillContextUsed = Static<typeof SkillContextUsed>;

/** What an execution ran and what came of it. */
export const SkillExecution = Type.Object({
  skill: Type.Object({ id: Uuid(), name: Type.String(), version: Type.Integer() }),
  executor: SkillExecutor,
  /** The model that answered (as the endpoint named it); null for `render`. */
  model: Type.Union([Type.String(), Type.Null()]),
  /** The messages sent to the model (or, for `render`, to send). */
  messages: Type.Array(SkillMessage),
  contexts: Type.Array(SkillContextUsed),
  /** `render`: the rendered system prompt; `model`: the model's answer. */
  output: Type.String(),
  usage: Type.Union([Type.Object({ prompt_tokens: Type.Integer(), completion_tokens: Type.Integer() }), Type.Null()]),
  executed_at: Type.String(),
  duration_ms: Type.Integer(),
});
export type SkillExecution = Static<typeof SkillExecution>;

// Internal commands to the owner's principal actor and the skills service (the caller is the owner).
export const SkillListCommand = Type.Object({
  offset: Type.Integer({ minimum: 0 }),
  limit: Type.Integer({ minimum: 1, maximum: 100 }),
});
export const SkillListReply = Type.Object({ items: Type.Array(SkillView), total: Type.Integer() });
export const SkillGetCommand = Type.Object({ id: Type.String(), version: Type.Optional(Type.Integer({ minimum: 1 })) });
export const SkillPatchCommand = Type.Object({ id: Type.String(), patch: SkillPatchBody });
export const SkillExecuteCommand = Type.Object({
  id: Type.String(),
  input: Type.String(),
  variables: Type.Record(Type.String(), Type.String()),
  version: Type.Optional(Type.Integer({ minimum: 1 })),
});

/** `{{ name }}` in a template; anything else between braces is text. */
const placeholder = /\{\{\s*([A-Za-z_][A-Za-z0-9_]{0,63})\s*\}\}/g;

/** A template's variables, each once, in order of first use. */
export function templateVariables(template: string): string[] {
  return [...new Set([...template.matchAll(placeholder)].map((m) => m[1]!))];
}

/** The template with every variable replaced by its value, in one pass (a value's own braces stay as they are). */
export function renderTemplate(template: string, values: Record<string, string>): string {
  // Own properties only: `{{constructor}}` is a variable with no value, not Object's constructor.
  return template.replace(placeholder, (whole, name: string) => (Object.hasOwn(values, name) ? values[name]! : whole));
}
