import { ScriptedJobExecutor } from '../../../test/fakes/scripted-job-executor';
import { JobExecutors, jobKindOf } from './job-executors';

describe('JobExecutors', () => {
  it('runs a job with the executor registered for its kind, the part of its type before the dot', () => {
    const executors = new JobExecutors();
    const vms = new ScriptedJobExecutor();
    const backups = new ScriptedJobExecutor();
    executors.register('vm', vms);
    executors.register('backup', backups);

    expect(executors.for('vm.create')).toBe(vms);
    expect(executors.for('vm.delete')).toBe(vms);
    expect(executors.for('backup.restore.full')).toBe(backups);
  });

  it('has no executor for a kind nobody registered', () => {
    const executors = new JobExecutors();
    executors.register('vm', new ScriptedJobExecutor());

    expect(executors.for('volume.attach')).toBeNull();
    expect(executors.for('vmx.start')).toBeNull();
    expect(new JobExecutors().for('vm.start')).toBeNull();
  });

  it('refuses a second executor for one kind and keeps the first', () => {
    const executors = new JobExecutors();
    const first = new ScriptedJobExecutor();
    executors.register('vm', first);

    expect(() => executors.register('vm', new ScriptedJobExecutor())).toThrow(
      'an executor for "vm" jobs is registered already',
    );
    expect(executors.for('vm.start')).toBe(first);
  });

  it('takes the whole type as the kind of a type without a dot', () => {
    expect(jobKindOf('vm.create')).toBe('vm');
    expect(jobKindOf('backup.restore.full')).toBe('backup');
    expect(jobKindOf('reindex')).toBe('reindex');
  });
});
