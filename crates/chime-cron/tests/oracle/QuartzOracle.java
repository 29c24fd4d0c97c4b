// The conformance oracle: the real org.quartz.CronExpression (Quartz 2.3.2) answering the
// `chime cron next --batch` line protocol, so the Rust engine can be compared with it line by line.
//
// Input, one case per line:   EXPR<TAB>ZONE<TAB>AFTER_MS<TAB>COUNT
// Output, one line per input: EXPR<TAB>ZONE<TAB>AFTER_MS<TAB>t1,t2,...   (epoch milliseconds)
//                         or  EXPR<TAB>ZONE<TAB>AFTER_MS<TAB>INVALID
//
// The rules below must stay identical to chime_cron::batch, because whole lines are compared:
// - a line without exactly four TAB-separated columns, an AFTER_MS that is not a signed 64-bit
//   integer, or a COUNT outside 1..=10000 is INVALID; the first three columns are echoed (missing
//   ones as empty strings), a trailing CR is dropped;
// - ZONE must be one of TimeZone.getAvailableIDs() (TimeZone.getTimeZone silently falls back
//   to GMT for unknown names, which would hide typos);
// - EXPR is INVALID when the CronExpression constructor throws, and also when getTimeAfter
//   throws (Quartz accepts a few expressions, such as 'L' in the seconds field, that it can
//   never evaluate);
// - t(k+1) = getTimeAfter(t(k)), t(0) = AFTER_MS; the list stops early at the first null
//   (no later fire time before Quartz's year limit), which can leave it empty.
//
// Build and run: javac -cp quartz2.jar -d DIR QuartzOracle.java
//                java -cp DIR:quartz2.jar -Duser.language=en -Duser.country=US QuartzOracle

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Date;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.TimeZone;
import org.quartz.CronExpression;

public final class QuartzOracle {
    private static final int MAX_COUNT = 10000;

    public static void main(String[] args) throws Exception {
        Set<String> zones = new HashSet<>(Arrays.asList(TimeZone.getAvailableIDs()));
        // A parsed expression keeps no state between getTimeAfter calls except its zone,
        // so one instance per expression text is enough.
        Map<String, CronExpression> parsed = new HashMap<>();
        Set<String> invalid = new HashSet<>();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        BufferedWriter out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), 1 << 16);
        String line;
        while ((line = in.readLine()) != null) {
            if (line.endsWith("\r")) {
                line = line.substring(0, line.length() - 1);
            }
            String[] cols = line.split("\t", -1);
            StringBuilder sb = new StringBuilder();
            for (int i = 0; i < 3; i++) {
                sb.append(i < cols.length ? cols[i] : "").append('\t');
            }
            sb.append(answer(cols, zones, parsed, invalid));
            out.write(sb.toString());
            out.write('\n');
        }
        out.flush();
    }

    private static String answer(String[] cols, Set<String> zones, Map<String, CronExpression> parsed,
            Set<String> invalid) {
        if (cols.length != 4) {
            return "INVALID";
        }
        long after;
        int count;
        try {
            after = Long.parseLong(cols[2]);
            count = Integer.parseInt(cols[3]);
        } catch (NumberFormatException e) {
            return "INVALID";
        }
        if (count < 1 || count > MAX_COUNT || !zones.contains(cols[1])) {
            return "INVALID";
        }
        String expr = cols[0];
        if (invalid.contains(expr)) {
            return "INVALID";
        }
        CronExpression ce = parsed.get(expr);
        if (ce == null) {
            try {
                ce = new CronExpression(expr);
            } catch (Exception e) {
                invalid.add(expr);
                return "INVALID";
            }
            parsed.put(expr, ce);
        }
        ce.setTimeZone(TimeZone.getTimeZone(cols[1]));
        StringBuilder times = new StringBuilder();
        long t = after;
        try {
            for (int k = 0; k < count; k++) {
                Date next = ce.getTimeAfter(new Date(t));
                if (next == null) {
                    break;
                }
                t = next.getTime();
                if (k > 0) {
                    times.append(',');
                }
                times.append(t);
            }
        } catch (Exception e) {
            return "INVALID";
        }
        return times.toString();
    }
}
