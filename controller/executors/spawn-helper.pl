#!/usr/bin/perl
# episodic's spawn helper: a small, long-lived process that starts agent processes for the local controller.
#
# Why it exists: Node starts a child with fork(), which copies the page tables of the whole controller (a
# few ms at 50 MB, tens of ms at 300 MB) on the controller's only thread. This helper is a few MB, so its
# fork is cheap, and it runs beside the controller instead of blocking it. Perl because it is on every
# Linux and macOS machine (Debian: perl-base is Essential) and has fork, exec, setpgid and waitpid in core.
#
# It is also a child subreaper (Linux): processes an agent leaves behind are re-parented here instead of
# to init, so the controller can tell "nothing was left behind" without scanning /proc after every episode.
#
# Protocol (stdin, from the controller): one request per record, COUNT \0 op \0 id \0 fields... \0, where COUNT
# is the number of NUL-terminated fields after it.
#   start: op "run" or "hold", then cwd \0 stdin-path \0 stdout-path \0 stderr-path \0 argc \0 argv... \0 KEY=VALUE...
#          argv is exec'd directly, never via a shell. "hold" stops the child just before exec until "go":
#          the controller records the pid first, so a crash in between leaves nothing running unrecorded.
#   go:    op "go", no fields: exec the held child.
# Replies (stdout), one line each, in order per id:
#   S id pid            exec'd (run) or forked and waiting (hold); an X follows (or, for a held child whose
#                       set-up or exec failed, an F)
#   F id ERRNO message  could not be set up or exec'd (nothing runs; no X follows)
#   X id code signal    the child was reaped ("-" for the absent one of code/signal)
# EOF on stdin: exit at once. Running children are left alone (a restarted controller adopts or kills them);
# held ones see their go pipe close and exit without exec.
use strict;
use warnings;
use Config;
use Errno ();
use POSIX ();

# The controller decides what to do on Ctrl-C/TERM; children get the default dispositions back before exec.
$SIG{$_} = 'IGNORE' for qw(INT TERM HUP QUIT PIPE);
my $STOP_SIGNALS = POSIX::SigSet->new(map { POSIX->can("SIG$_")->() } qw(INT TERM HUP QUIT));

# prctl(PR_SET_CHILD_SUBREAPER, 1). Perl has no prctl; syscall numbers per architecture.
my %PRCTL = (x86_64 => 157, aarch64 => 167, i686 => 172, i386 => 172, arm => 172, armv7l => 172, ppc64le => 171, s390x => 172, riscv64 => 167);
my ($arch) = $Config{archname} =~ /^([^-]+)/;
my $subreaper = ($^O eq 'linux' && defined $arch && $PRCTL{$arch} && syscall($PRCTL{$arch}, 36, 1, 0, 0, 0) == 0) ? 1 : 0;

$| = 1;
pipe(my $wake_r, my $wake_w) or die "pipe: $!";
$wake_w->autoflush(1);
for my $fh ($wake_r, $wake_w) { my $f = fcntl($fh, POSIX::F_GETFL(), 0); fcntl($fh, POSIX::F_SETFL(), $f | POSIX::O_NONBLOCK()); }
$SIG{CHLD} = sub { syswrite($wake_w, 'x') };

print "READY $$ $subreaper\n";

my %id_of;      # pid => request id, for children started here and not yet reaped
my %held;       # request id => [go pipe, status pipe, pid] of children waiting for "go"
my %execing;    # pid => { fh, id, pid, report, run } of children whose exec outcome is not known yet
my $buf = '';

sub reply { syswrite(STDOUT, $_[0]); return }

sub reap {
  while ((my $pid = waitpid(-1, POSIX::WNOHANG())) > 0) {
    my $status = $?;
    my $id = delete $id_of{$pid};
    next unless defined $id;    # an orphan re-parented here: just reap it
    # Dead before we heard how its exec went: the pipe is complete now (only the child held its write end).
    if (my $e = $execing{$pid}) {
      $e->{report} .= child_report($e->{fh});
      next if !exec_known($e);    # it failed: F sent, no X
    }
    if (my $h = delete $held{$id}) {
      # Ended while held: killed, or its set-up failed (then it said why; the pipe is complete now).
      my $report = child_report($h->[1]);
      if ($report ne '') {
        failed($id, $pid, $report);
        next;
      }
    }
    my $code = POSIX::WIFEXITED($status) ? POSIX::WEXITSTATUS($status) : '-';
    my $sig = POSIX::WIFSIGNALED($status) ? POSIX::WTERMSIG($status) : '-';
    reply("X $id $code $sig\n");
  }
}

# A child's status pipe reached EOF: it exec'd ('' report), or failed and said why. Returns whether it runs.
sub exec_known {
  my ($e) = @_;
  delete $execing{$e->{pid}};
  close($e->{fh});
  if ($e->{report} eq '') {
    reply("S $e->{id} $e->{pid}\n") if $e->{run};
    return 1;
  }
  delete $id_of{$e->{pid}};
  failed($e->{id}, $e->{pid}, $e->{report});
  return 0;
}

# Waits for the exec in the main loop instead of here: the helper never blocks on one child's exec.
sub watch_exec {
  my ($status_r, $id, $pid, $run) = @_;
  $execing{$pid} = { fh => $status_r, id => $id, pid => $pid, report => '', run => $run };
}

sub errno_name {
  local $! = 0 + $_[0];
  my ($name) = grep { $!{$_} } keys %!;
  return $name // 'ESPAWN';
}

# Reads what the child reports on its status pipe until EOF: '' when it exec'd, else why it failed.
sub child_report {
  my ($status_r) = @_;
  my $report = '';
  for (;;) {
    my $got = sysread($status_r, $report, 4096, length $report);
    next if !defined $got && $!{EINTR};
    last if !$got;
  }
  return $report;
}

sub failed {
  my ($id, $pid, $report) = @_;
  waitpid($pid, 0);    # -1 when reap() got it first
  $report =~ s/\n/ /g;
  reply("F $id $report\n");
}

sub start {
  my ($hold, $id, $cwd, $in, $out, $err, $argc, @rest) = @_;
  my @argv = splice(@rest, 0, $argc);
  my %env = map { my $i = index($_, '='); (substr($_, 0, $i) => substr($_, $i + 1)) } @rest;
  # Like libuv: the child reports a failed set-up or exec on a close-on-exec pipe, so EOF means exec worked.
  pipe(my $status_r, my $status_w) or return reply("F $id " . errno_name($!) . " pipe failed: $!\n");
  my ($go_r, $go_w);
  if ($hold) { pipe($go_r, $go_w) or return reply("F $id " . errno_name($!) . " pipe failed: $!\n") }
  # The pid may be signalled as soon as it is known (a held child is reported before it has reset the
  # signals it inherits as ignored): blocked until then, a signal stays pending instead of being dropped.
  my $unblocked = POSIX::SigSet->new;
  POSIX::sigprocmask(POSIX::SIG_BLOCK(), $STOP_SIGNALS, $unblocked);
  my $pid = fork();
  if ($pid) { POSIX::sigprocmask(POSIX::SIG_SETMASK(), $unblocked) }
  if (!defined $pid) {
    my $e = $!;
    POSIX::sigprocmask(POSIX::SIG_SETMASK(), $unblocked);
    return reply("F $id " . errno_name($e) . " fork failed: $e\n");
  }
  if ($pid == 0) {
    # The child: own process group, default signals, files on 0/1/2, then exec (fds above 2 are
    # close-on-exec in Perl, so the agent inherits nothing of ours).
    close($status_r);
    my $fail = sub { my $e = $!; syswrite($status_w, errno_name($e) . " $_[0]: $e"); POSIX::_exit(127) };
    POSIX::setpgid(0, 0);
    $SIG{$_} = 'DEFAULT' for qw(INT TERM HUP QUIT PIPE CHLD);
    POSIX::sigprocmask(POSIX::SIG_SETMASK(), POSIX::SigSet->new());
    chdir($cwd) or $fail->("cannot enter $cwd");
    @ENV{keys %env} = values %env;
    open(STDIN, '<', $in eq '' ? '/dev/null' : $in) or $fail->("cannot open $in");
    open(STDOUT, '>>', $out) or $fail->("cannot open $out");
    open(STDERR, '>', $err) or $fail->("cannot open $err");
    if ($hold) {
      close($go_w);
      my $got;
      do { $got = sysread($go_r, my $go, 1) } while (!defined $got && $!{EINTR});
      POSIX::_exit(125) if !$got;    # the controller is gone (or gave up): never start unrecorded
    }
    { no warnings 'exec'; exec { $argv[0] } @argv; }
    $fail->("cannot start $argv[0]");
  }
  close($status_w);
  POSIX::setpgid($pid, $pid);    # also here, so the group exists before we report the pid
  $id_of{$pid} = $id;
  if ($hold) {
    # Reply at once: the child sets itself up while the controller records the pid. A set-up failure
    # comes back as F after go (or when the child is reaped, if that is first).
    close($go_r);
    $held{$id} = [$go_w, $status_r, $pid];
    return reply("S $id $pid\n");
  }
  watch_exec($status_r, $id, $pid, 1);    # S (or F) once it exec'd
}

sub go {
  my ($id) = @_;
  my $h = delete $held{$id} or return;    # already gone (killed while held)
  my ($go_w, $status_r, $pid) = @$h;
  syswrite($go_w, 'g');
  close($go_w);
  watch_exec($status_r, $id, $pid, 0);    # nothing to say if the exec works; F if it fails
}

# Parse complete records out of $buf; leave a partial one for the next read.
sub take_requests {
  while ($buf =~ /^(\d+)\0/) {
    my ($count, $at) = ($1, length($1) + 1);
    my @fields;
    for (1 .. $count) {
      my $end = index($buf, "\0", $at);
      return if $end < 0;
      push @fields, substr($buf, $at, $end - $at);
      $at = $end + 1;
    }
    substr($buf, 0, $at) = '';
    my $op = shift @fields // '';
    if ($op eq 'go') { go(@fields) }
    elsif ($op eq 'run' || $op eq 'hold') { start($op eq 'hold', @fields) }
    else { die "spawn helper: unknown request $op\n" }
  }
  die "spawn helper: malformed request\n" if length($buf) && $buf !~ /^\d*$/;
}

for (;;) {
  reap();
  my $rin = '';
  vec($rin, fileno($_), 1) = 1 for \*STDIN, $wake_r, map { $_->{fh} } values %execing;
  # Perl runs %SIG handlers between ops, so a SIGCHLD that lands just before select() blocks does not wake
  # it (seen once as a test that hung with a zombie child): while children run, look every 100 ms at worst.
  my $n = select(my $rout = $rin, undef, undef, %id_of ? 0.1 : undef);
  next if $n < 0;    # EINTR: SIGCHLD arrived
  if (vec($rout, fileno($wake_r), 1)) { 1 while sysread($wake_r, my $drain, 512) }
  for my $e (values %execing) {
    next unless vec($rout, fileno($e->{fh}), 1);
    my $got = sysread($e->{fh}, $e->{report}, 4096, length $e->{report});
    exec_known($e) if defined $got && $got == 0;
  }
  if (vec($rout, fileno(STDIN), 1)) {
    my $got = sysread(STDIN, $buf, 65536, length $buf);
    exit 0 if !$got;    # the controller is gone
    take_requests();
  }
}
