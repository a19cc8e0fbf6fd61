/**
 * JSON Schemas of the ACM run-governance inputs (docs/acm.md). Embedded here because the engine reads
 * no files; schemas/acm/*.schema.json are the published copies and a unit test keeps them equal.
 */
type Schema = Record<string, unknown>;

const ID = { type: 'string', minLength: 1, maxLength: 256 };
const EXT = { '^x-': {} };
const ERROR_TYPES = ['RETRYABLE_ERROR', 'FATAL_ERROR', 'COMPENSATION_REQUIRED', 'VERIFICATION_FAILED'];

export const CONTEXT_PACKET_SCHEMA: Schema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $id: 'https://acgp.dev/steward/schemas/acm/context-packet.schema.json',
  title: 'ACM v0.2 §9 Context Packet',
  description: 'The immutable input bundle of planning. Sources must be snapshots: a content digest (sha256:<hex>, …) or a URI naming a snapshot id (kb-snap://…, …@sha256:…).',
  type: 'object',
  required: ['id', 'sources', 'facts'],
  additionalProperties: false,
  patternProperties: EXT,
  properties: {
    id: ID,
    version: { description: "The agent's own tag; Steward assigns the monotonic version itself.", type: ['string', 'integer'] },
    sources: { type: 'array', items: { type: 'string', minLength: 1 } },
    facts: { type: 'object', description: 'Normalised, scalarised facts used in planning (guards read them as context.facts.*).' },
    assumptions: { type: 'array', items: { type: 'string' } },
    constraints_inherited: { type: 'object' },
    provenance: { type: 'object' },
  },
};

const TASK: Schema = {
  type: 'object',
  required: ['id'],
  additionalProperties: false,
  patternProperties: EXT,
  properties: {
    id: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]*$', maxLength: 128 },
    capability: { type: 'string' },
    description: { type: 'string' },
    join: { description: 'A join node: the predecessors it waits for (ACM §13).', type: 'array', minItems: 1, items: { type: 'string' } },
    checkpoint: { description: 'A human checkpoint: waits for an approval event naming it (ACM §13).', type: 'boolean' },
    approvers: { type: 'array', items: { type: 'string' } },
    verificationRefs: { type: 'array', items: { type: 'string' } },
    spec: { type: 'object', description: 'The task spec as far as the planner sends it (kept in the replay bundle).' },
  },
};

const EDGE: Schema = {
  type: 'object',
  required: ['from', 'to'],
  additionalProperties: false,
  patternProperties: EXT,
  properties: {
    from: { type: 'string', minLength: 1 },
    to: { type: 'string', minLength: 1 },
    guard: { type: 'string', minLength: 1, description: 'Condition DSL over recorded facts only: $<task>.field, context.facts.*, policy.*' },
    on_error: { type: 'string', description: `A typed error edge: ${ERROR_TYPES.join(', ')} or another upper-case type`, pattern: '^[A-Z][A-Z0-9_]*$' },
  },
  not: { required: ['guard', 'on_error'] },
};

const PLAN: Schema = {
  type: 'object',
  required: ['id', 'contextRef', 'tasks'],
  additionalProperties: false,
  patternProperties: EXT,
  properties: {
    id: ID,
    contextRef: ID,
    rationale: { type: 'string' },
    capabilityMapVersion: { type: 'string' },
    tasks: { type: 'array', minItems: 1, items: TASK },
    edges: { type: 'array', items: EDGE },
  },
};

export const PLAN_EVENT_SCHEMA: Schema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $id: 'https://acgp.dev/steward/schemas/acm/plan-event.schema.json',
  title: 'ACM v0.2 §12/§13 plan event (trace hook "plan")',
  description: 'One or more plans over the same context, their graphs and the selection. Other trace fields (trace_id, agent_id, timestamp, hook, run) travel alongside.',
  type: 'object',
  required: ['goal', 'plans', 'selection'],
  properties: {
    goal: { type: 'object', required: ['id'], properties: { id: ID, context_required: { type: 'boolean' }, contextRef: { type: 'string' } } },
    plans: { type: 'array', minItems: 1, items: PLAN },
    selection: {
      type: 'object',
      required: ['method', 'chosenPlanId'],
      additionalProperties: false,
      properties: {
        method: { enum: ['human', 'policy', 'llm'] },
        chosenPlanId: ID,
        rationale: { type: 'string' },
        selector: { type: 'string' },
      },
    },
    planner: { type: 'object', description: 'Planner metadata (prompts, model ids, seeds), kept in planner/ of the replay bundle.' },
  },
};

export const TASK_POLICY_INPUT_SCHEMA: Schema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $id: 'https://acgp.dev/steward/schemas/acm/task-policy-input.schema.json',
  title: 'ACM v0.2 §14.1 task policy input (trace hooks task.pre and task.post)',
  type: 'object',
  required: ['task'],
  description: 'The run is named by run.runId or by the trace field run_id.',
  properties: {
    action: { enum: ['task.pre', 'task.post'], description: "Equals the trace's hook when given." },
    task: {
      type: 'object',
      required: ['id'],
      properties: { id: { type: 'string', minLength: 1 }, capability: { type: 'string' }, input: {}, idemKey: { type: 'string' } },
    },
    goal: { type: 'object', required: ['id'], properties: { id: { type: 'string' } } },
    plan: { type: 'object', properties: { id: { type: 'string' }, contextRef: { type: 'string' }, capabilityMapVersion: { type: 'string' } } },
    run: { type: 'object', properties: { engine: { type: 'string' }, runId: { type: 'string', minLength: 1 } } },
    metrics: { type: 'object', properties: { cost_usd: { type: 'number' }, elapsed_sec: { type: 'number' } } },
    output: { description: 'task.post: the task output' },
    error: { type: 'object', required: ['type'], properties: { type: { type: 'string', minLength: 1 }, message: { type: 'string' } } },
    verification: {
      type: 'array',
      description: "task.post: the agent's own verification results (claims)",
      items: { type: 'object', required: ['id', 'passed'], properties: { id: { type: 'string' }, passed: { type: 'boolean' }, detail: {} } },
    },
  },
};

export const VERIFICATION_SHEET_SCHEMA: Schema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $id: 'https://acgp.dev/steward/schemas/acm/verification-sheet.schema.json',
  title: 'ACM v0.2 §14.2 verification sheet (one capability)',
  type: 'object',
  required: ['capability', 'checks'],
  additionalProperties: false,
  patternProperties: EXT,
  properties: {
    $schema: { type: 'string' },
    capability: { type: 'string', minLength: 1 },
    version: { type: ['string', 'integer'] },
    description: { type: 'string' },
    checks: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        required: ['id', 'condition'],
        additionalProperties: false,
        properties: {
          id: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_.-]*$' },
          description: { type: 'string' },
          condition: { description: 'Condition DSL over input.*, output.*, error.*, task.*, context.facts.*', type: ['string', 'object', 'boolean'] },
        },
      },
    },
  },
};

export const BUNDLE_MANIFEST_SCHEMA: Schema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $id: 'https://acgp.dev/steward/schemas/acm/replay-bundle.schema.json',
  title: 'ACM Replay Bundle interchange schema (bundle.json)',
  description: 'The manifest of an ACM v0.2 §17 replay bundle: every file with its sha256, the run, and the public keys that signed its ledger entries and verdicts (docs/acm.md).',
  type: 'object',
  required: ['format', 'format_version', 'run', 'files', 'keys'],
  additionalProperties: false,
  properties: {
    format: { const: 'acm-replay-bundle' },
    format_version: { const: 1 },
    engine: { type: 'object', properties: { name: { type: 'string' }, version: { type: 'string' } } },
    run: {
      type: 'object',
      required: ['id', 'agent_id'],
      properties: {
        id: ID,
        agent_id: ID,
        tenant: { type: 'string' },
        goal: { type: 'object' },
        plan_id: { type: 'string' },
        context: { type: 'object' },
        capability_map_version: { type: 'string' },
        engine: { type: 'string' },
        first_event_ms: { type: 'integer' },
        last_event_ms: { type: 'integer' },
      },
    },
    files: {
      type: 'array',
      items: {
        type: 'object',
        required: ['path', 'sha256', 'bytes'],
        additionalProperties: false,
        properties: {
          path: { type: 'string', pattern: '^(?!/)(?!.*\\.\\.)[A-Za-z0-9@._/-]+$' },
          sha256: { type: 'string', pattern: '^[0-9a-f]{64}$' },
          bytes: { type: 'integer', minimum: 0 },
          kind: { type: 'string' },
        },
      },
    },
    keys: {
      type: 'array',
      items: {
        type: 'object',
        required: ['kid', 'alg', 'public_key'],
        additionalProperties: false,
        properties: {
          kid: { type: 'string', minLength: 1 },
          alg: { const: 'Ed25519' },
          public_key: { type: 'string', description: 'SPKI PEM' },
          signs: { type: 'array', items: { enum: ['ledger', 'verdicts'] } },
        },
      },
    },
  },
};

const INTERVENTION = { enum: ['ok', 'nudge', 'flag', 'escalate', 'block', 'halt'] };
const VIOLATIONS = ['no_plan', 'outside_plan', 'forbidden_branch', 'unreached_task', 'join_waiting', 'approval_missing', 'unknown_approver', 'replan_refused', 'verification_failed', 'verification_disagrees', 'foreign_agent'];

export const ACM_OPTIONS_SCHEMA: Schema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $id: 'https://acgp.dev/steward/schemas/acm/acm-options.schema.json',
  title: 'Run-governance options (acm.yaml next to the blueprints)',
  type: 'object',
  additionalProperties: false,
  patternProperties: EXT,
  properties: {
    $schema: { type: 'string' },
    on: { type: 'object', description: 'The intervention each violation is answered with.', additionalProperties: false, properties: Object.fromEntries(VIOLATIONS.map((v) => [v, INTERVENTION])) },
    allowReplan: { type: 'boolean', description: 'Dynamic re-selection (ACM §12); default false.' },
    approvers: { type: 'array', items: { type: 'string', minLength: 1 }, description: 'The approver registry of human checkpoints.' },
  },
};

/** file name under schemas/acm/ → schema (the published copies). */
export const ACM_SCHEMA_FILES: Record<string, Schema> = {
  'context-packet.schema.json': CONTEXT_PACKET_SCHEMA,
  'plan-event.schema.json': PLAN_EVENT_SCHEMA,
  'task-policy-input.schema.json': TASK_POLICY_INPUT_SCHEMA,
  'verification-sheet.schema.json': VERIFICATION_SHEET_SCHEMA,
  'replay-bundle.schema.json': BUNDLE_MANIFEST_SCHEMA,
  'acm-options.schema.json': ACM_OPTIONS_SCHEMA,
};
