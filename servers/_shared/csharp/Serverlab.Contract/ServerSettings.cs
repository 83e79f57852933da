using System.Collections;
using System.Net;
using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;

namespace Serverlab.Contract;

/// <summary>A setting is missing or wrong; the message names the variable and says what to do.</summary>
public sealed class InvalidSettingException(string message) : Exception(message);

/// <summary>
/// Start-up configuration shared by every C# stack, read once from the environment
/// before the web host is built (contracts/README.md, "Configuration by environment").
/// </summary>
/// <param name="Host">The address to listen on, as given (<c>HOST</c>, default <c>0.0.0.0</c>).</param>
/// <param name="ListenAddress"><see cref="Host"/> as an address (<c>localhost</c> is 127.0.0.1).</param>
/// <param name="Port">The port to listen on (<c>PORT</c>, default: the stack's port).</param>
/// <param name="Workers">
/// <c>WORKERS</c>, 1 to 1024; unset or empty: <see cref="Environment.ProcessorCount"/>,
/// which counts the CPUs the process may use (the cgroup CPU quota, rounded up, and
/// the affinity mask or cpuset).
/// </param>
/// <param name="CalendarPath">The calendar file (<c>WORKDAY_CALENDAR</c>).</param>
/// <param name="Routes">The contract's routes over that calendar.</param>
/// <param name="TlsCertificate">
/// The certificate with its private key to serve HTTPS with (<c>TLS_CERT</c> and
/// <c>TLS_KEY</c>, PEM files); null: plain HTTP.
/// </param>
public sealed record ServerSettings(
    string Host, IPAddress ListenAddress, int Port, int Workers, string CalendarPath, Routes Routes,
    X509Certificate2? TlsCertificate = null)
{
    /// <summary>The variable that names the listen address.</summary>
    public const string HostVariable = "HOST";

    /// <summary>The variable that names the port.</summary>
    public const string PortVariable = "PORT";

    /// <summary>The variable that sets the number of workers.</summary>
    public const string WorkersVariable = "WORKERS";

    /// <summary>The variable that names the calendar file.</summary>
    public const string CalendarVariable = "WORKDAY_CALENDAR";

    /// <summary>The variable that names the PEM certificate to serve HTTPS with.</summary>
    public const string TlsCertVariable = "TLS_CERT";

    /// <summary>The variable that names the PEM private key of that certificate.</summary>
    public const string TlsKeyVariable = "TLS_KEY";

    /// <summary>The largest accepted <c>WORKERS</c>.</summary>
    public const int MaxWorkers = 1024;

    /// <summary>The listen address when <c>HOST</c> is unset.</summary>
    public const string DefaultHost = "0.0.0.0";

    /// <summary>Reads the settings from the process environment.</summary>
    /// <exception cref="InvalidSettingException">A variable is missing or wrong.</exception>
    public static ServerSettings FromEnvironment(string displayName, int defaultPort) =>
        FromEnvironment(displayName, defaultPort, Environment.GetEnvironmentVariables());

    /// <summary>
    /// For <c>Main</c>: reads the settings, or prints why they are wrong as one line on
    /// standard error and exits with status 2 before the web host starts, so that a
    /// misconfiguration gives one clear message, not a stack trace.
    /// </summary>
    public static ServerSettings FromEnvironmentOrExit(string displayName, int defaultPort)
    {
        try
        {
            return FromEnvironment(displayName, defaultPort);
        }
        catch (InvalidSettingException e)
        {
            Console.Error.WriteLine($"error: {e.Message}");
            Environment.Exit(2);
            throw; // unreachable: Exit does not return
        }
    }

    /// <summary>Reads the settings from <paramref name="environment"/> (name to value).</summary>
    /// <exception cref="InvalidSettingException">A variable is missing or wrong.</exception>
    public static ServerSettings FromEnvironment(string displayName, int defaultPort, IDictionary environment)
    {
        ArgumentNullException.ThrowIfNull(environment);
        string? Get(string name) => environment[name] as string;

        int workers = ParseWorkers(Get(WorkersVariable));
        string host = string.IsNullOrEmpty(Get(HostVariable)) ? DefaultHost : Get(HostVariable)!;
        IPAddress address = ParseHost(host);
        int port = ParsePort(Get(PortVariable), defaultPort);
        string calendarPath = Get(CalendarVariable) ?? "";
        TradingCalendar calendar = LoadCalendar(calendarPath);
        X509Certificate2? certificate = LoadTlsCertificate(Get(TlsCertVariable), Get(TlsKeyVariable));
        return new ServerSettings(
            host, address, port, workers, calendarPath, new Routes(displayName, calendar), certificate);
    }

    /// <summary>
    /// <c>TLS_CERT</c> and <c>TLS_KEY</c>: both set, the PEM certificate and its private key
    /// (RSA or ECDSA) to serve HTTPS with; both unset or empty, null (plain HTTP).
    /// </summary>
    /// <exception cref="InvalidSettingException">Only one is set, or the files cannot be read as a certificate and its key.</exception>
    public static X509Certificate2? LoadTlsCertificate(string? certPath, string? keyPath)
    {
        bool hasCert = !string.IsNullOrEmpty(certPath);
        bool hasKey = !string.IsNullOrEmpty(keyPath);
        if (!hasCert && !hasKey)
        {
            return null;
        }
        if (!hasCert || !hasKey)
        {
            (string given, string missing) = hasCert ? (TlsCertVariable, TlsKeyVariable) : (TlsKeyVariable, TlsCertVariable);
            throw new InvalidSettingException(
                $"{given} is set but {missing} is not: set both (the PEM certificate and its key) to serve HTTPS, or neither for plain HTTP");
        }
        try
        {
            return X509Certificate2.CreateFromPemFile(certPath!, keyPath);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException or CryptographicException
                                      or ArgumentException)
        {
            throw new InvalidSettingException(
                $"{TlsCertVariable}={certPath}, {TlsKeyVariable}={keyPath}: cannot load the certificate and key: "
                + e.Message.ReplaceLineEndings(" "));
        }
    }

    /// <summary>
    /// <c>WORKERS</c>: an integer from 1 to <see cref="MaxWorkers"/> in ASCII digits;
    /// unset or empty means <see cref="Environment.ProcessorCount"/>.
    /// </summary>
    /// <exception cref="InvalidSettingException">Anything else.</exception>
    public static int ParseWorkers(string? value)
    {
        if (string.IsNullOrEmpty(value))
        {
            return Environment.ProcessorCount;
        }
        int workers = value.Length <= 4 ? Parameters.Digits(value) : -1;
        if (workers is < 1 or > MaxWorkers)
        {
            throw new InvalidSettingException(
                $"{WorkersVariable}='{value}' must be an integer from 1 to {MaxWorkers} (or unset: the CPU count)");
        }
        return workers;
    }

    /// <summary><c>PORT</c>: an integer from 1 to 65535 in ASCII digits; unset or empty: <paramref name="defaultPort"/>.</summary>
    /// <exception cref="InvalidSettingException">Anything else.</exception>
    public static int ParsePort(string? value, int defaultPort)
    {
        if (string.IsNullOrEmpty(value))
        {
            return defaultPort;
        }
        int port = value.Length <= 5 ? Parameters.Digits(value) : -1;
        if (port is < 1 or > 65535)
        {
            throw new InvalidSettingException($"{PortVariable}='{value}' must be a port number from 1 to 65535");
        }
        return port;
    }

    /// <summary><c>HOST</c>: an IPv4 or IPv6 address, or <c>localhost</c> (127.0.0.1).</summary>
    /// <exception cref="InvalidSettingException">Anything else.</exception>
    public static IPAddress ParseHost(string value)
    {
        if (value == "localhost")
        {
            return IPAddress.Loopback;
        }
        string literal = value.StartsWith('[') && value.EndsWith(']') ? value[1..^1] : value;
        if (IPAddress.TryParse(literal, out IPAddress? address) && (literal.Contains(':') || literal.Count(c => c == '.') == 3))
        {
            return address;
        }
        throw new InvalidSettingException(
            $"{HostVariable}='{value}' must be an IP address (such as 0.0.0.0 or 127.0.0.1) or localhost");
    }

    /// <summary>Reads the calendar named by <c>WORKDAY_CALENDAR</c>.</summary>
    /// <exception cref="InvalidSettingException">The variable is unset or empty, or the file cannot be read or parsed.</exception>
    public static TradingCalendar LoadCalendar(string? path)
    {
        if (string.IsNullOrEmpty(path))
        {
            throw new InvalidSettingException(
                $"{CalendarVariable} is not set: it must name the trading calendar file"
                + " (contracts/calendar/xshg-non-trading-weekdays.txt)");
        }
        try
        {
            return TradingCalendar.Load(path);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException or FormatException
                                      or ArgumentException or NotSupportedException)
        {
            throw new InvalidSettingException(
                $"{CalendarVariable}={path}: cannot read the trading calendar: {e.Message.ReplaceLineEndings(" ")}");
        }
    }
}
