/** Who is asking, and the request id that ties logs, events, jobs and errors together. */
export interface RequestContext {
  actor: string;
  traceId: string;
}

/** The 202 answer of every infrastructure-changing command. */
export interface JobAccepted {
  resource_id: string;
  job_id: string;
}
