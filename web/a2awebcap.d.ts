// TypeScript types of a2aWebCap's A2A capnweb binding (urn:a2awebcap:capnweb:v1).
//
// docs/capnweb-binding.md is the binding's definition; this file types it for use with the npm
// capnweb package's own types:
//
//   import { newWebSocketRpcSession } from "capnweb";
//   import type { A2AService } from "./a2awebcap";
//   const agent = newWebSocketRpcSession<A2AService>("wss://agent.example/a2a/capnweb");
//
// The server's objects (A2AService, AgentSession, TaskHandle, Session, PushSubscription,
// Memory, Operator, Capabilities, Lease) extend capnweb's RpcTarget, so capnweb's stub types
// make their methods callable and pipelinable, and the capabilities they return come back as
// stubs. Requests and results are the A2A 1.0 ProtoJSON objects (camelCase fields, enums as
// strings such as "TASK_STATE_COMPLETED"); fields a result may omit are optional. They are type
// aliases, not interfaces, so that capnweb's types accept a promise (a pipelined result) for
// any field of a request, as the binding does.
//
// Two limits of capnweb's stub types shape this file: a stub sees only the last overload of a
// method, so a streaming call has one signature and a union result (StreamingResult); and a
// stub cannot pipeline into one member of a union, so pipelining into a SendMessageResponse
// says which it will be: `session.sendMessage(req) as unknown as RpcPromise<{task: Task}>`.
//
// Served by `a2awebcap serve` at /web/a2awebcap.d.ts; web/a2awebcap.d.ts in the repository.
// Checked against the Go server by TestTypeScriptClient (cmd/a2awebcap, interop/ts/client.ts).

import type { RpcStub, RpcTarget } from "capnweb";

// ---------------------------------------------------------------------------------------------
// JSON

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

/** An RFC 3339 timestamp, e.g. "2026-11-27T16:00:00Z". A Date is also accepted in requests. */
export type Timestamp = string;

// ---------------------------------------------------------------------------------------------
// Service parameters (docs/capnweb-binding.md, "Service parameters")

/**
 * Per-call service parameters: the optional last argument of every call, e.g.
 * `{"A2A-Version": "1.0", "Last-Event-ID": "7", "A2A-Observer-Window": "1"}`. Values replace
 * the connection's (its upgrade's or batch's headers, or URL query) of the same name. Never
 * credentials: a call carrying `Authorization`, `Cookie` or a declared API-key name fails
 * with INVALID_PARAMS.
 */
export type ServiceParams = {
  "A2A-Version"?: string;
  "A2A-Extensions"?: string | string[];
  "Last-Event-ID"?: string;
  /** Calls to an observer or push callback kept unanswered at once, "1" to "256" (default 16). */
  "A2A-Observer-Window"?: string;
  [name: string]: string | string[] | undefined;
};

/** HTTP headers the client would otherwise have sent, e.g. `{Authorization: "Bearer …"}` or `{"X-API-Key": "…"}`. */
export type Credentials = { [header: string]: string };

// ---------------------------------------------------------------------------------------------
// A2A 1.0 data model (ProtoJSON)

export type Role = "ROLE_USER" | "ROLE_AGENT";

export type TaskState =
  | "TASK_STATE_SUBMITTED"
  | "TASK_STATE_WORKING"
  | "TASK_STATE_INPUT_REQUIRED"
  | "TASK_STATE_AUTH_REQUIRED"
  | "TASK_STATE_COMPLETED"
  | "TASK_STATE_FAILED"
  | "TASK_STATE_CANCELED"
  | "TASK_STATE_REJECTED";

/** What every part may carry besides its content. */
type PartCommon = {
  filename?: string;
  mediaType?: string;
  metadata?: JsonObject;
};

export type TextPart = PartCommon & {
  text: string;
};
/** File content inline: base64 in results; a Uint8Array is also accepted in requests. */
export type RawPart = PartCommon & {
  raw: string;
};
export type UrlPart = PartCommon & {
  url: string;
};
export type DataPart = PartCommon & {
  data: JsonValue;
};
/** A part has exactly one of text, raw, url or data. */
export type Part = TextPart | RawPart | UrlPart | DataPart;
/** A part as a request may give it: raw bytes as a Uint8Array too. */
export type PartInput = Part | (PartCommon & { raw: Uint8Array });

export type Message = {
  messageId: string;
  role: Role;
  parts: Part[];
  contextId?: string;
  taskId?: string;
  referenceTaskIds?: string[];
  extensions?: string[];
  metadata?: JsonObject;
};
/** A message as a request gives it. */
export type MessageInput = Omit<Message, "parts" | "referenceTaskIds" | "extensions"> & {
  parts: readonly PartInput[];
  referenceTaskIds?: readonly string[];
  extensions?: readonly string[];
};

export type TaskStatus = {
  state: TaskState;
  message?: Message;
  timestamp?: Timestamp;
};

export type Artifact = {
  artifactId: string;
  name?: string;
  description?: string;
  parts: Part[];
  extensions?: string[];
  metadata?: JsonObject;
};

export type Task = {
  id: string;
  contextId: string;
  status: TaskStatus;
  history?: Message[];
  artifacts?: Artifact[];
  /** Carries `"a2awebcap.seq"`, the task's event sequence number (see Reconnection). */
  metadata?: JsonObject;
};

export type TaskStatusUpdateEvent = {
  taskId: string;
  contextId: string;
  status: TaskStatus;
  metadata?: JsonObject;
};

export type TaskArtifactUpdateEvent = {
  taskId: string;
  contextId: string;
  artifact: Artifact;
  append?: boolean;
  lastChunk?: boolean;
  metadata?: JsonObject;
};

/** One event of a stream: exactly one field is set. */
export type StreamResponse =
  | { task: Task }
  | { message: Message }
  | { statusUpdate: TaskStatusUpdateEvent }
  | { artifactUpdate: TaskArtifactUpdateEvent };

/** The result of sendMessage, and of a stream delivered to an observer. */
export type SendMessageResponse = { task: Task } | { message: Message };

export type PushAuthenticationInfo = {
  scheme: string;
  credentials?: string;
};

export type TaskPushNotificationConfig = {
  tenant?: string;
  taskId: string;
  id?: string;
  url: string;
  token?: string;
  authentication?: PushAuthenticationInfo;
};

export type SendMessageConfiguration = {
  acceptedOutputModes?: string[];
  returnImmediately?: boolean;
  historyLength?: number;
  taskPushNotificationConfig?: TaskPushNotificationConfig;
};

export type SendMessageRequest = {
  tenant?: string;
  message: MessageInput;
  configuration?: SendMessageConfiguration;
  metadata?: JsonObject;
};

export type GetTaskRequest = {
  tenant?: string;
  id: string;
  historyLength?: number;
};

export type ListTasksRequest = {
  tenant?: string;
  contextId?: string;
  status?: TaskState;
  pageSize?: number;
  pageToken?: string;
  historyLength?: number;
  statusTimestampAfter?: Timestamp | Date;
  includeArtifacts?: boolean;
};

export type ListTasksResponse = {
  tasks: Task[];
  totalSize: number;
  pageSize: number;
  nextPageToken: string;
};

export type CancelTaskRequest = {
  tenant?: string;
  id: string;
  metadata?: JsonObject;
};

export type SubscribeToTaskRequest = {
  tenant?: string;
  id: string;
};

export type GetTaskPushNotificationConfigRequest = {
  tenant?: string;
  taskId: string;
  id: string;
};

export type ListTaskPushNotificationConfigsRequest = {
  tenant?: string;
  taskId: string;
  pageSize?: number;
  pageToken?: string;
};

export type ListTaskPushNotificationConfigsResponse = {
  configs: TaskPushNotificationConfig[];
  nextPageToken?: string;
};

export type DeleteTaskPushNotificationConfigRequest = {
  tenant?: string;
  taskId: string;
  id: string;
};

export type GetExtendedAgentCardRequest = {
  tenant?: string;
};

// The agent card.

export type AgentInterface = {
  url: string;
  /** "urn:a2awebcap:capnweb:v1", "JSONRPC", "HTTP+JSON", "GRPC", … */
  protocolBinding: string;
  protocolVersion: string;
  tenant?: string;
};

export type AgentExtension = {
  uri?: string;
  description?: string;
  required?: boolean;
  params?: JsonObject;
};

export type AgentCapabilities = {
  streaming?: boolean;
  pushNotifications?: boolean;
  extendedAgentCard?: boolean;
  extensions?: AgentExtension[];
};

export type AgentProvider = {
  organization: string;
  url: string;
};

/** One way to satisfy the card's security: scheme name → scopes (all of them needed). */
export type SecurityRequirement = {
  schemes: { [scheme: string]: string[] };
};

export type OAuthFlow = {
  authorizationUrl?: string;
  tokenUrl?: string;
  deviceAuthorizationUrl?: string;
  refreshUrl?: string;
  scopes: { [scope: string]: string };
  pkceRequired?: boolean;
};

export type SecurityScheme =
  | { apiKeySecurityScheme: { name: string; location: "header" | "query" | "cookie"; description?: string } }
  | { httpAuthSecurityScheme: { scheme: string; bearerFormat?: string; description?: string } }
  | { mtlsSecurityScheme: { description?: string } }
  | {
      oauth2SecurityScheme: {
        description?: string;
        oauth2MetadataUrl?: string;
        flows: {
          authorizationCode?: OAuthFlow;
          clientCredentials?: OAuthFlow;
          implicit?: OAuthFlow;
          password?: OAuthFlow;
          deviceCode?: OAuthFlow;
        };
      };
    }
  | { openIdConnectSecurityScheme: { openIdConnectUrl: string; description?: string } };

export type AgentSkill = {
  id: string;
  name: string;
  description: string;
  tags: string[];
  examples?: string[];
  inputModes?: string[];
  outputModes?: string[];
  securityRequirements?: SecurityRequirement[];
};

export type AgentCardSignature = {
  protected: string;
  signature: string;
  header?: JsonObject;
};

export type AgentCard = {
  name: string;
  description: string;
  version: string;
  supportedInterfaces: AgentInterface[];
  capabilities: AgentCapabilities;
  defaultInputModes: string[];
  defaultOutputModes: string[];
  skills: AgentSkill[];
  provider?: AgentProvider;
  documentationUrl?: string;
  iconUrl?: string;
  securitySchemes?: { [name: string]: SecurityScheme };
  securityRequirements?: SecurityRequirement[];
  signatures?: AgentCardSignature[];
};

// ---------------------------------------------------------------------------------------------
// Errors (docs/capnweb-binding.md, "Errors")

export type A2AErrorReason =
  | "TASK_NOT_FOUND"
  | "TASK_NOT_CANCELABLE"
  | "PUSH_NOTIFICATION_NOT_SUPPORTED"
  | "UNSUPPORTED_OPERATION"
  | "CONTENT_TYPE_NOT_SUPPORTED"
  | "INVALID_AGENT_RESPONSE"
  | "EXTENDED_AGENT_CARD_NOT_CONFIGURED"
  | "EXTENSION_SUPPORT_REQUIRED"
  | "VERSION_NOT_SUPPORTED"
  | "INVALID_REQUEST"
  | "METHOD_NOT_FOUND"
  | "INVALID_PARAMS"
  | "INTERNAL_ERROR"
  | "UNAUTHENTICATED"
  | "UNAUTHORIZED"
  | "RATE_LIMITED"
  | "QUOTA_EXCEEDED"
  | "LOGIN_THROTTLED";

/** What a failed call rejects with: a capnweb Error whose own properties carry the A2A error. */
export interface A2AError extends Error {
  /** The JSON-RPC code, e.g. -32001. */
  code: number;
  reason: A2AErrorReason;
  /** The JSON-RPC `data` array: typed details, ErrorInfo first. */
  details?: JsonObject[];
}

// ---------------------------------------------------------------------------------------------
// The binding's objects

/** Called with each event of a stream, in order; awaited (backpressure, docs "Streaming"). */
export type Observer = (event: StreamResponse) => void | Promise<void>;

/**
 * A stream without an observer: its events as a ReadableStream, and a handle on its task
 * (whose calls wait until the first event names the task).
 */
export type StreamResult = {
  stream: ReadableStream<StreamResponse>;
  handle: TaskHandle;
};

/** A streaming call in an HTTP batch: the events gathered, and whether the stream ended. */
export type BatchStreamResult = {
  events: StreamResponse[];
  done: boolean;
};

/**
 * What sendStreamingMessage, subscribeToTask and TaskHandle.subscribe resolve to: with an
 * observer, the final SendMessageResponse; without, over a WebSocket, a StreamResult; over an
 * HTTP batch, a BatchStreamResult. (One signature rather than overloads: capnweb's stub types
 * see only the last overload of a method.) Narrow with `"stream" in r`, `"events" in r`.
 */
export type StreamingResult = SendMessageResponse | StreamResult | BatchStreamResult;

/** Options of AgentSession.attenuate: restrictions only narrow. */
export type AttenuateOptions = {
  /** Refuse sendMessage, sendStreamingMessage, cancelTask and push-config writes. */
  readOnly?: boolean;
  /** See only these tasks; start none. */
  tasks?: readonly string[];
  /** Seconds until it fails with UNAUTHORIZED. */
  expiresIn?: number;
};

/** One principal's A2A operations (docs/capnweb-binding.md, "AgentSession"). */
export interface AgentSession extends RpcTarget {
  sendMessage(request: SendMessageRequest, params?: ServiceParams): Promise<SendMessageResponse>;
  /** With an observer: the final response once every call returned. Without: a StreamResult at once. */
  sendStreamingMessage(
    request: SendMessageRequest,
    observer?: Observer | ServiceParams,
    params?: ServiceParams,
  ): Promise<StreamingResult>;
  getTask(request: GetTaskRequest, params?: ServiceParams): Promise<Task>;
  listTasks(request: ListTasksRequest, params?: ServiceParams): Promise<ListTasksResponse>;
  cancelTask(request: CancelTaskRequest, params?: ServiceParams): Promise<Task>;
  subscribeToTask(
    request: SubscribeToTaskRequest,
    observer?: Observer | ServiceParams,
    params?: ServiceParams,
  ): Promise<StreamingResult>;
  createTaskPushNotificationConfig(
    request: TaskPushNotificationConfig,
    params?: ServiceParams,
  ): Promise<TaskPushNotificationConfig>;
  getTaskPushNotificationConfig(
    request: GetTaskPushNotificationConfigRequest,
    params?: ServiceParams,
  ): Promise<TaskPushNotificationConfig>;
  listTaskPushNotificationConfigs(
    request: ListTaskPushNotificationConfigsRequest,
    params?: ServiceParams,
  ): Promise<ListTaskPushNotificationConfigsResponse>;
  deleteTaskPushNotificationConfig(
    request: DeleteTaskPushNotificationConfigRequest,
    params?: ServiceParams,
  ): Promise<undefined>;
  getExtendedAgentCard(request?: GetExtendedAgentCardRequest, params?: ServiceParams): Promise<AgentCard>;

  /** A handle on the task, without a round trip: access is checked per call. */
  task(id: string): TaskHandle;
  /** Calls callback with each of the task's events until it is terminal (WebSocket only). */
  subscribeToPushNotifications(taskId: string, callback: Observer, params?: ServiceParams): Promise<PushSubscription>;

  /** A weaker session of the same principal. */
  attenuate(options: AttenuateOptions): AgentSession;
  /** Revokes a session attenuated from this one (its stub), and every one attenuated from it. */
  revoke(session: RpcStub<AgentSession>): Promise<undefined>;
  /** A bearer token that restore() turns back into this attenuated session, on any replica. */
  save(): Promise<string>;

  /** The principal's agent capabilities (runtime agents). */
  capabilities(options?: { tenant?: string }): Capabilities;

  // The sessions extension (docs/sessions.md).
  listSessions(request?: ListSessionsRequest, params?: ServiceParams): Promise<ListSessionsResponse>;
  /** The caller's session (A2A context) contextId, without a round trip. */
  session(contextId: string, tenant?: string): Session;

  // The memory and operator extensions (docs/sessions.md).
  memory(): Memory;
  operator(): Operator;
}

/** The main object (import ID 0): the connection's own session, plus the card and authentication. */
export interface A2AService extends AgentSession {
  getAgentCard(): Promise<AgentCard>;
  /** A session for the principal the credentials identify; rejects with UNAUTHENTICATED. */
  authenticate(credentials: Credentials): AgentSession;
  /** The session a token from save() stands for. */
  restore(token: string): AgentSession;
}

/** A capability naming one task; calls check access every time. */
export interface TaskHandle extends RpcTarget {
  readonly id: string;
  get(request?: Omit<GetTaskRequest, "id">, params?: ServiceParams): Promise<Task>;
  cancel(request?: Omit<CancelTaskRequest, "id">, params?: ServiceParams): Promise<Task>;
  subscribe(observer?: Observer | ServiceParams, params?: ServiceParams): Promise<StreamingResult>;
}

/** What subscribeToPushNotifications returns; disposing it also ends the subscription. */
export interface PushSubscription extends RpcTarget {
  cancel(): void;
}

// ---------------------------------------------------------------------------------------------
// The sessions extension (docs/sessions.md)

export type SessionState = "dormant" | "ready" | "streaming" | "waiting" | "draining" | "collapsed";
export type SessionStrategy = "sliding" | "forget" | "summarize" | "coherent";
export type BudgetName = "tokens" | "turns" | "cost" | "wall";
export type TurnStatus = "completed" | "input-required" | "failed" | "canceled" | "aborted";

export type ListSessionsRequest = {
  tenant?: string;
  pageSize?: number;
  pageToken?: string;
};

export type ListSessionsResponse = {
  sessions: SessionMetrics[];
  nextPageToken?: string;
};

export type TokenUsage = {
  tokensIn: number;
  tokensOut: number;
  estimated?: boolean;
};

export type SessionTotals = TokenUsage & {
  costMicros: number;
  costUnknown?: boolean;
  turns: number;
};

export type BudgetStatus = {
  budget: BudgetName;
  limit: number;
  used: number;
  left: number;
  low?: boolean;
};

export type SessionWarning = {
  budget: BudgetName;
  used: number;
  limit: number;
  turn: number;
  at: Timestamp;
  text: string;
};

export type SessionCollapse = {
  reason: BudgetName | "closed";
  turn: number;
  at?: Timestamp;
  detail?: string;
};

/** Where a forked or merged session, or a turn, came from. */
export type SessionOrigin = {
  session: string;
  turn?: number;
  from?: number;
  through?: number;
  task?: string;
};

export type TurnSpan = {
  from: number;
  through: number;
};

export type SessionMetrics = {
  id: string;
  state: SessionState;
  turn: number;
  running?: number;
  turns: { [status in TurnStatus]?: number };
  used: SessionTotals;
  budgets?: BudgetStatus[];
  /** ProtoJSON durations, e.g. "1.5s". */
  latencyMean: string;
  latencyMax: string;
  context: number;
  window: number;
  strategy: SessionStrategy;
  summary?: TurnSpan;
  warnings?: SessionWarning[];
  collapse?: SessionCollapse;
  origin?: SessionOrigin;
  waiting?: number;
  opened?: Timestamp;
  updated?: Timestamp;
  resets?: number[];
  deadline?: Timestamp;
};

export type ChatMessage = {
  role: "system" | "user" | "assistant";
  content: string;
};

export type Fact = {
  id: string;
  kind: "belief" | "observation";
  text: string;
};

export type Turn = {
  number: number;
  kind?: "merge";
  task?: string;
  merged?: string[];
  user: ChatMessage;
  response: ChatMessage;
  status: TurnStatus;
  error?: string;
  started: Timestamp;
  ended: Timestamp;
  latency: string;
  usage: TokenUsage;
  model?: string;
  costMicros: number;
  costUnknown?: boolean;
  contextBefore: number;
  contextAfter: number;
  attempts?: number;
  facts?: Fact[];
  origin?: SessionOrigin;
};

export type SessionHistory = {
  turns: Turn[];
  resets?: number[];
  total: number;
  next?: number;
};

export type SessionWindow = {
  strategy: SessionStrategy;
  messages: ChatMessage[];
  tokens: number;
  limit: number;
  verbatim?: number[];
  summary?: TurnSpan;
  facts?: Fact[];
  omitted?: number[];
};

/** One of the caller's sessions (an A2A context); a session not the caller's fails on first use. */
export interface Session extends RpcTarget {
  /** Its A2A contextId. */
  readonly id: string;
  metrics(params?: ServiceParams): Promise<SessionMetrics>;
  history(request?: { from?: number; limit?: number }, params?: ServiceParams): Promise<SessionHistory>;
  context(params?: ServiceParams): Promise<SessionWindow>;
  reset(params?: ServiceParams): Promise<SessionMetrics>;
  merge(request: { from: string; mode: "turns" | "summary" }, params?: ServiceParams): Promise<SessionMetrics>;
  /** The new session. */
  fork(request?: { turn?: number; newContextId?: string }, params?: ServiceParams): Session;
}

// ---------------------------------------------------------------------------------------------
// The memory extension (docs/sessions.md, "Your memory")

export type BeliefProvenance = {
  source: { kind: "user" | "tool" | "agent" | "self" | "operator"; name?: string };
  /** The IDs of the observations behind it, and against it. */
  observations: string[];
  against?: string[];
  /** Where it was learned. */
  context: { task?: string; session?: string; turn?: number };
  /** The rule that wrote it, and why. */
  rule: string;
  reason: string;
};

export type Belief = {
  id: string;
  subject: string;
  value: string;
  /** 0 to 1. */
  confidence: number;
  status: "active" | "disputed" | "superseded" | "forgotten";
  uses: number;
  supersedes?: string;
  supersededBy?: string;
  provenance: BeliefProvenance;
  created: Timestamp;
  updated: Timestamp;
};

export type WorkingNote = {
  subject: string;
  value: string;
  observations: string[];
  uses: number;
  time: Timestamp;
};

export type MemoryView = {
  beliefs: Belief[];
  working: WorkingNote[];
  observations: number;
};

export type ForgetResult = {
  forgotten: boolean;
  reply: string;
  belief: Belief;
};

/** What the agent remembers about the caller. */
export interface Memory extends RpcTarget {
  get(request?: { tenant?: string; history?: boolean }, params?: ServiceParams): Promise<MemoryView>;
  forget(request: { tenant?: string; belief: string; reason?: string }, params?: ServiceParams): Promise<ForgetResult>;
}

// ---------------------------------------------------------------------------------------------
// The operator extension (docs/sessions.md, "The operator"): the meta level of the agent's
// instances. A caller who is no operator gets UNAUTHORIZED.

/** A rule of the runtime's rule language (docs/agents.md). */
export type AgentRule = {
  name: string;
  when: string;
  action:
    | "remember"
    | "note"
    | "promote"
    | "demote"
    | "forget"
    | "revise"
    | "recall"
    | "reply"
    | "ask"
    | "call"
    | "consult"
    | "adopt"
    | "achieve"
    | "drop";
  params?: { [name: string]: string };
  stop?: boolean;
  reason: string;
  description?: string;
};

/** A change to an instance's rules. (Its keys are capitalized on the wire.) */
export type Proposal = {
  Op: "add" | "replace" | "remove";
  Rule: AgentRule;
  Justification: string;
  /** IDs of the observations that motivate it. */
  Evidence: string[] | null;
};

export type PolicyVersion = {
  version: number;
  rules: AgentRule[] | null;
  /** Absent for version 1. */
  proposal?: Proposal;
  applied: Timestamp;
  approver?: string;
  review?: string;
};

export type PolicyReview = {
  /** "r1", "r2", … */
  id: string;
  proposal: Proposal;
  status: "pending" | "approved" | "rejected";
  base: number;
  proposed: Timestamp;
  reviewer?: string;
  reason?: string;
  decided?: Timestamp;
  version?: number;
};

/** An instance is named by its principal: tenant and user name ("" the anonymous one). */
export type InstanceRef = { tenant?: string; name: string };

export interface Operator extends RpcTarget {
  listInstances(request?: { tenant?: string }, params?: ServiceParams): Promise<{ instances: { tenant: string; name: string }[] }>;
  getPolicy(
    request: InstanceRef,
    params?: ServiceParams,
  ): Promise<{ current: number; versions: PolicyVersion[]; reviews: PolicyReview[] }>;
  /** The policy version its approval made. */
  approveProposal(request: InstanceRef & { review: string }, params?: ServiceParams): Promise<{ version: number }>;
  rejectProposal(
    request: InstanceRef & { review: string; reason: string },
    params?: ServiceParams,
  ): Promise<{ review: PolicyReview }>;
  /** The version now in force. */
  rollbackPolicy(request: InstanceRef, params?: ServiceParams): Promise<{ version: number }>;
}

// ---------------------------------------------------------------------------------------------
// Agent capabilities (docs/capabilities.md; docs/capnweb-binding.md, "Capabilities")

export type StrategyKind = "pre-approved" | "audit-only" | "contract" | "budget" | "call-by-call";

export type CapabilityStrategy = {
  kind: StrategyKind;
  budget?: { calls?: number; bytes?: number; files?: number };
};

export type Contract = {
  reads?: string[];
  writes?: string[];
  executes?: string[];
  network?: string[];
  spawns?: boolean;
};

export type CapabilityEffect = {
  access: "reads" | "writes" | "executes" | "network" | "spawns";
  resource: string;
};

export type CapabilityMethod = {
  name: string;
  description: string;
  /** JSON Schemas. */
  params?: JsonObject;
  result?: JsonObject;
  effects?: CapabilityEffect[];
};

export type CapabilityManifest = {
  name: string;
  version: string;
  description: string;
  contract: Contract;
  strategy: { minimum: StrategyKind; recommended: StrategyKind };
  methods?: CapabilityMethod[];
  runtime?: string;
  source?: string;
  tests?: string;
};

export type CapabilityOffer = {
  manifest: CapabilityManifest;
  default: CapabilityStrategy;
  installed: boolean;
};

export type InstalledCapability = {
  name: string;
  strategy: CapabilityStrategy;
  contract: Contract;
  approved: boolean;
};

export type HeldCapability = {
  name: string;
  description: string;
  methods: CapabilityMethod[];
  contract: Contract;
  strategy: CapabilityStrategy;
  sessions?: { [contextId: string]: CapabilityStrategy };
  minimum: StrategyKind;
  approved: boolean;
  approvedBy?: string;
  usage?: { [scope: string]: { calls: number; bytes: number; files?: string[] } };
};

export type CapabilityOrigin = {
  kind: string;
  name?: string;
  task?: string;
};

export type PendingApproval = {
  id: string;
  kind: "call" | "contract" | "install";
  capability: string;
  method?: string;
  args?: JsonValue;
  contract: Contract;
  strategy?: CapabilityStrategy;
  session?: string;
  origin: CapabilityOrigin;
  requested: Timestamp;
  status: "pending" | "approved" | "denied";
  by?: string;
  reason?: string;
  decided?: Timestamp;
};

export type AuditRecord = {
  seq: number;
  time: Timestamp;
  principal: string;
  session?: string;
  capability: string;
  method?: string;
  args?: string;
  strategy?: CapabilityStrategy;
  origin?: CapabilityOrigin;
  outcome:
    | "ok"
    | "failed"
    | "refused"
    | "denied"
    | "approval-required"
    | "approved"
    | "exhausted"
    | "revoked"
    | "installed"
    | "uninstalled"
    | "strategy";
  pending?: string;
  by?: string;
  reason?: string;
  accessed?: string[];
  bytes?: number;
  /** Nanoseconds. */
  duration?: number;
  error?: string;
};

export type CapabilityRestrictions = {
  methods?: string[];
  contract?: Contract;
  readOnly?: boolean;
};

/** A capability a client lends the agent: see docs/capnweb-binding.md, "Lending". */
export type CapabilityDescription = {
  name: string;
  description: string;
  methods: CapabilityMethod[];
  contract: Contract;
};

/** Strategies as `serve -capability-strategy` writes them: "contract", "budget:calls=3", … */
export type StrategyText = string;

export interface Capabilities extends RpcTarget {
  available(): Promise<CapabilityOffer[]>;
  show(name: string): Promise<CapabilityOffer>;
  install(name: string, strategy?: StrategyText, restrictions?: CapabilityRestrictions): Promise<InstalledCapability>;
  uninstall(name: string): Promise<undefined>;
  installed(): Promise<HeldCapability[]>;
  setStrategy(name: string, strategy: StrategyText, session?: string): Promise<undefined>;
  pending(): Promise<PendingApproval[]>;
  decide(id: string, approve: boolean, reason?: string): Promise<undefined>;
  audit(query?: { capability?: string; after?: number; limit?: number }): Promise<AuditRecord[]>;
  /** The agent holds target (an RpcTarget whose methods take one object) as a capability. */
  lend(description: CapabilityDescription, target: RpcTarget, options?: { strategy?: StrategyText }): Lease;
}

/** A lent capability; disposing it, or closing the connection, revokes it too. */
export interface Lease extends RpcTarget {
  readonly name: string;
  revoke(): Promise<undefined>;
}
