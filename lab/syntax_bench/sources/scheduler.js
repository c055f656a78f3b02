// A tiny job scheduler with priorities, retries and a rate limiter.
'use strict';

class RateLimiter {
  constructor(limit, windowMs) {
    this.limit = limit;
    this.windowMs = windowMs;
    this.stamps = [];
  }

  allow(now) {
    while (this.stamps.length > 0 && now - this.stamps[0] >= this.windowMs) {
      this.stamps.shift();
    }
    if (this.stamps.length < this.limit) {
      this.stamps.push(now);
      return true;
    }
    return false;
  }

  waitTime(now) {
    if (this.stamps.length < this.limit) {
      return 0;
    }
    return Math.max(0, this.windowMs - (now - this.stamps[0]));
  }
}

class Job {
  constructor(name, run, priority = 0, retries = 0) {
    this.name = name;
    this.run = run;
    this.priority = priority;
    this.retries = retries;
    this.attempts = 0;
    this.state = 'pending';
  }
}

class Scheduler {
  constructor(limiter) {
    this.limiter = limiter;
    this.queue = [];
    this.done = [];
    this.failed = [];
  }

  add(name, run, options = {}) {
    const job = new Job(name, run, options.priority || 0, options.retries || 0);
    this.queue.push(job);
    this.queue.sort((a, b) => b.priority - a.priority || a.name.localeCompare(b.name));
    return job;
  }

  next(now) {
    if (this.queue.length === 0) {
      return null;
    }
    if (!this.limiter.allow(now)) {
      return null;
    }
    return this.queue.shift();
  }

  runOnce(now) {
    const job = this.next(now);
    if (job === null) {
      return false;
    }
    job.attempts += 1;
    try {
      job.result = job.run(job.attempts);
      job.state = 'done';
      this.done.push(job);
    } catch (error) {
      if (job.attempts <= job.retries) {
        job.state = 'retrying';
        this.queue.push(job);
      } else {
        job.state = 'failed';
        job.error = String(error);
        this.failed.push(job);
      }
    }
    return true;
  }

  drain(start, step) {
    let now = start;
    let rounds = 0;
    while (this.queue.length > 0 && rounds < 1000) {
      if (!this.runOnce(now)) {
        now += Math.max(step, this.limiter.waitTime(now));
      }
      rounds += 1;
    }
    return { now, rounds };
  }

  summary() {
    const names = (jobs) => jobs.map((job) => job.name).join(', ');
    return `done: ${names(this.done)}; failed: ${names(this.failed)}`;
  }
}

function parseDuration(text) {
  const match = /^(\d+)(ms|s|m)$/.exec(text.trim());
  if (!match) {
    throw new Error(`bad duration: ${text}`);
  }
  const value = Number(match[1]);
  if (match[2] === 'ms') {
    return value;
  }
  if (match[2] === 's') {
    return value * 1000;
  }
  return value * 60000;
}

function groupBy(items, keyOf) {
  const groups = new Map();
  for (const item of items) {
    const key = keyOf(item);
    if (!groups.has(key)) {
      groups.set(key, []);
    }
    groups.get(key).push(item);
  }
  return groups;
}

function backoff(attempt, base, cap) {
  const delay = base * Math.pow(2, attempt - 1);
  return Math.min(cap, delay);
}

function formatTable(rows, columns) {
  const widths = columns.map((column) => Math.max(column.length, ...rows.map((row) => String(row[column]).length)));
  const line = (cells) => cells.map((cell, index) => String(cell).padEnd(widths[index])).join(' | ');
  const out = [line(columns)];
  out.push(widths.map((width) => '-'.repeat(width)).join('-+-'));
  for (const row of rows) {
    out.push(line(columns.map((column) => row[column])));
  }
  return out.join('\n');
}

module.exports = { RateLimiter, Job, Scheduler, parseDuration, groupBy, backoff, formatTable };
