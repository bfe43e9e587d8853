/** The 202 answer of every infrastructure-changing command. */
export interface JobAccepted {
  resource_id: string;
  job_id: string;
}
