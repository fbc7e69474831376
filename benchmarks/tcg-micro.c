/* What qemu TCG makes expensive: ns per iteration of the primitives a peripheral leans on.
 * benchmarks/README.md ("What TCG makes expensive") has a host and a sandbox run side by side:
 *   cc -O2 -o out/tcg-micro benchmarks/tcg-micro.c -lpthread
 *   out/tcg-micro                                            # host
 *   scripts/sandbox --out /tmp/sb -- "$PWD/out/tcg-micro"    # inside the VM
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <pthread.h>
#include <unistd.h>
#include <sys/syscall.h>
static double now(void){ struct timespec t; clock_gettime(CLOCK_MONOTONIC,&t); return t.tv_sec*1e9+t.tv_nsec; }
volatile long sink; long counter;
__attribute__((noinline)) long f(long x){ __asm__ volatile(""); return x+1; }
long (*volatile fp)(long) = f;
pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
#define RUN(name, n, body) { double t=now(); for(long i=0;i<(n);i++){ body; } double d=(now()-t)/(n); printf("%-22s %8.2f ns\n", name, d); }
int main(){
  long x=0;
  RUN("plain add (volatile)", 20000000, sink+=i)
  RUN("direct call+ret", 20000000, x=f(x))
  RUN("indirect call+ret", 20000000, x=fp(x))
  RUN("atomic fetch_add", 20000000, __atomic_fetch_add(&counter,1,__ATOMIC_RELAXED))
  RUN("atomic cmpxchg", 20000000, { long e=counter; __atomic_compare_exchange_n(&counter,&e,e+1,0,__ATOMIC_ACQ_REL,__ATOMIC_RELAXED);} )
  RUN("mutex lock+unlock", 5000000, {pthread_mutex_lock(&m); pthread_mutex_unlock(&m);})
  RUN("malloc+free 48 B", 5000000, {void*p=malloc(48); sink+=(long)p; free(p);})
  RUN("syscall getppid", 500000, sink+=syscall(SYS_getppid))
  RUN("clock_gettime", 2000000, sink+=(long)now())
  sink+=x; return 0;
}
